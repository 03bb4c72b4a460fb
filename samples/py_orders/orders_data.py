"""The order database of the orders sample, generated deterministically.

This is the Python twin of samples/orders/dataset.cpp: every value is a function of its row id through
splitmix64, so both build byte-for-byte the same rows. Change both or neither.
"""
import os
import sqlite3

CUSTOMERS = 100_000
ORDERS = 300_000
_MASK = (1 << 64) - 1

FIRST = ["James", "Mary", "Robert", "Patricia", "John", "Jennifer", "Michael", "Linda", "David", "Elizabeth",
         "William", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah", "Minjun", "Seoyeon",
         "Hiroshi", "Yuki", "Lukas", "Anna"]
LAST = ["Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez",
        "Hernandez", "Lopez", "Kim", "Lee", "Park", "Choi", "Tanaka", "Suzuki", "Mueller", "Schmidt", "Rossi",
        "Dubois", "Nowak", "Silva"]
CO_A = ["Northwind", "Contoso", "Fabrikam", "Adventure", "Tailspin", "Wingtip", "Litware", "Proseware", "Fourth",
        "Coho", "Lucerne", "Margie"]
CO_B = ["Traders", "Ltd", "Inc", "Works", "Toys", "Winery", "Airlines", "Publishing", "Coffee", "Vineyard",
        "Systems", "Travel"]
STREET = ["Main St", "Oak Ave", "Pine Rd", "Maple Dr", "Cedar Ln", "Elm St", "Lake View", "Hill Rd", "Park Ave",
          "River Rd", "Sunset Blvd", "Harbor Way"]
CITY = ["Seattle", "Portland", "Seoul", "Busan", "Tokyo", "Osaka", "Berlin", "Munich", "Paris", "Lyon", "Madrid",
        "Lisbon", "London", "Dublin", "Oslo", "Warsaw"]
COUNTRY = ["USA", "USA", "Korea", "Korea", "Japan", "Japan", "Germany", "Germany", "France", "France", "Spain",
           "Portugal", "UK", "Ireland", "Norway", "Poland"]


def splitmix64(x):
    z = (x + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def _h(row_id, k):
    return splitmix64((row_id * 16 + k) & _MASK)


def make_customer(i):
    first, last = FIRST[_h(i, 0) % len(FIRST)], LAST[_h(i, 1) % len(LAST)]
    city = _h(i, 7) % 16
    return (i, f"{first} {last}", f"{CO_A[_h(i, 2) % len(CO_A)]} {CO_B[_h(i, 3) % len(CO_B)]}",
            f"{first.lower()}.{last.lower()}{i}@example.com", "+1-555-%04d" % (_h(i, 4) % 10000),
            f"{1 + _h(i, 5) % 9999} {STREET[_h(i, 6) % len(STREET)]}", CITY[city], COUNTRY[city],
            _h(i, 8) % 10_000_000)


def make_order(j):
    o = j + 1_000_000_000
    return (j, 1 + _h(o, 0) % CUSTOMERS, "2025-%02d-%02d" % (1 + _h(o, 1) % 12, 1 + _h(o, 2) % 28),
            _h(o, 3) % 5, _h(o, 4) % 1_000_000)


def ensure_database(path):
    """Creates the database at `path` when missing (via a temporary file and a rename). True if it did."""
    if os.path.exists(path):
        return False
    tmp = f"{path}.tmp.{os.getpid()}"
    con = sqlite3.connect(tmp)
    try:
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        con.execute("CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT NOT NULL, company TEXT NOT NULL, "
                    "email TEXT NOT NULL, phone TEXT NOT NULL, address TEXT NOT NULL, city TEXT NOT NULL, "
                    "country TEXT NOT NULL, balance_cents INTEGER NOT NULL)")
        con.execute("CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, "
                    "order_date TEXT NOT NULL, status INTEGER NOT NULL, total_cents INTEGER NOT NULL)")
        con.executemany("INSERT INTO customers VALUES(?,?,?,?,?,?,?,?,?)",
                        (make_customer(i) for i in range(1, CUSTOMERS + 1)))
        con.executemany("INSERT INTO orders VALUES(?,?,?,?,?)", (make_order(j) for j in range(1, ORDERS + 1)))
        con.execute("CREATE INDEX orders_customer ON orders(customer_id)")
        con.commit()
    except BaseException:
        con.close()
        os.unlink(tmp)
        raise
    con.close()
    os.rename(tmp, path)
    return True
