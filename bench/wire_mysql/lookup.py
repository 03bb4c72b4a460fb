"""N primary-key lookups over one connection: MySQLdb (C over libmariadb: the agent's library hooks) or
PyMySQL (pure Python: the agent's wire parser). argv: driver, port, n. Prints the process's CPU ns per
statement over the loop (every thread: the agent's transport thread included; start-up and connect not)."""
import sys
import time

driver, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if driver == "mysqldb":
    import MySQLdb as m
    c = m.connect(host="127.0.0.1", port=port, user="root", database="txray")
else:
    import pymysql as m
    c = m.connect(host="127.0.0.1", port=port, user="root", database="txray")
cur = c.cursor()
t0 = time.process_time_ns()
for i in range(n):
    cur.execute("SELECT name FROM people WHERE id = %s", (1 + i % 1000,))
    cur.fetchall()
print((time.process_time_ns() - t0) / n)
c.close()
