"""A Python MySQL client for tests/e2e/test_mariadb.py: the same script through MySQLdb (mysqlclient, C
over libmariadb: the agent sees SQL rows) or pymysql (pure Python over a socket: the agent sees only the
socket). Literal values that must never reach the store contain "secret".

    python3 mariadb_py_client.py MySQLdb|pymysql PORT DATABASE
"""
import sys

driver, port, database = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if driver == "MySQLdb":
    import MySQLdb as db
    import MySQLdb.cursors as cursors
    unbuffered = cursors.SSCursor
else:
    import pymysql as db
    import pymysql.cursors as cursors
    unbuffered = cursors.SSCursor

conn = db.connect(host="127.0.0.1", port=port, user="root", password="", database=database)
cur = conn.cursor()
table = f"people_{driver.lower()}"
cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, name VARCHAR(64), email VARCHAR(128))")
cur.executemany(f"INSERT INTO {table} (id, name, email) VALUES (%s, %s, %s)",
                [(i, f"name-secret-{i}", f"mail{i}@secret.example") for i in range(1, 6)])
print("inserted", cur.rowcount)
cur.execute(f"SELECT id, name FROM {table} WHERE email LIKE %s ORDER BY id", ("%secret.example",))
print("selected", len(cur.fetchall()))
cur.execute(f"UPDATE {table} SET name = %s WHERE id IN %s", ("o'hara-secret", (1, 2)))
print("updated", cur.rowcount)
try:
    cur.execute("SELECT * FROM no_such_table WHERE name = %s", ("lookup-secret",))
except db.Error as e:
    print("error", e.args[0])
conn.commit()
ss = conn.cursor(unbuffered)
ss.execute(f"SELECT name FROM {table} WHERE id > %s", (1,))
print("streamed", sum(1 for _ in ss))
ss.close()
conn.close()
print("done")
