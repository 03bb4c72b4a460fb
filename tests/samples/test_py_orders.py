"""The Python order service, bare: same database, same messages as txray-orders."""
import os
import sqlite3
import subprocess
import tempfile
import unittest

from sampletools import PY_ORDERS, PYTHON, Server, orders_bench, orders_call, orders_db

from test_orders import expected_customers, expected_status, start_orders


class PyOrdersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cpp = start_orders()  # makes sure the shared database exists
        cls.py = Server([PYTHON, PY_ORDERS, "--db", orders_db()])
        cls.ep = dict(http=cls.py.addr("http"))

    @classmethod
    def tearDownClass(cls):
        cls.py.stop()
        cls.cpp.stop()

    def test_same_answers_as_the_cpp_service(self):
        for ch in ("http-json", "http-xml"):
            with self.subTest(channel=ch):
                for order_id in (1, 999, 299999):
                    r = orders_call(ch, "GetOrderStatus", order_id, **self.ep)
                    self.assertEqual((r["code"], r["status"]), (0, expected_status(order_id)))
                for after, n in ((0, 20), (31337, 50)):
                    py = orders_call(ch, "GetCustomers", after, n, **self.ep)
                    cpp = orders_call(ch, "GetCustomers", after, n, http=self.cpp.addr("http"))
                    self.assertEqual(py["customers"], expected_customers(after, n))
                    self.assertEqual(py["customers"], cpp["customers"])
                r = orders_call(ch, "GetOrderStatus", -5, **self.ep)
                self.assertEqual(r["code"], 1)
                self.assertIn("no order -5", r["error"])
                self.assertEqual(orders_call(ch, "GetCustomers", 0, 0, **self.ep)["code"], 2)

    def test_generates_the_same_database(self):
        """A fresh database written by the Python generator holds exactly the C++ generator's rows."""
        with tempfile.TemporaryDirectory(prefix="txray-pyorders-") as tmp:
            db = os.path.join(tmp, "py.db")
            with Server([PYTHON, PY_ORDERS, "--db", db, "--no-pool"]) as s:
                r = orders_call("http-json", "GetCustomers", 77000, 20, http=s.addr("http"))
                self.assertEqual(r["customers"], expected_customers(77000, 20))
            con = sqlite3.connect(db)
            con.execute("ATTACH ? AS cpp", (f"file:{orders_db()}?mode=ro",))
            for table in ("customers", "orders"):
                diff = con.execute(f"SELECT count(*) FROM (SELECT * FROM {table} EXCEPT SELECT * FROM cpp.{table})").fetchone()[0]
                self.assertEqual(diff, 0, table)
                self.assertEqual(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0],
                                 con.execute(f"SELECT count(*) FROM cpp.{table}").fetchone()[0])
            con.close()

    def test_bad_arguments(self):
        r = subprocess.run([PYTHON, PY_ORDERS, "--http", "127.0.0.1:http"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("bad --http value", r.stderr)

    def test_driver_runs_against_python(self):
        rows = orders_bench(channels=["http-json", "http-xml"], seconds=0.2, rounds=1, clients=2, **self.ep)
        for key, row in rows.items():
            self.assertEqual(row["errors"], 0, key)
            self.assertGreater(row["calls"], 0, key)


if __name__ == "__main__":
    unittest.main()
