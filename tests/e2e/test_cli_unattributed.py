"""Unattributed steps end to end, from the real agent: curl in HTTP mode serves no request, so its
connects and calls are unattributed steps of its process; they reach the store in the agent's container
(kind "unattributed"), which no reader counts as a transaction, and their calls are still linked to the
transactions they caused in a traced python3 http.server. `txray show --unattributed`, `txray report`
and `txray show --last` agree on it."""
import json
import os
import subprocess

from txraytest import (PYTHON, TXRAY, Collector, TxrayTestCase, agent_env, free_port, show_json, wait_for,
                       wait_port, wait_transactions)

CURL = "/usr/bin/curl"


class UnattributedEndToEnd(TxrayTestCase):
    def test_client_calls_are_unattributed_and_linked(self):
        www = os.path.join(self.tmp, "www")
        os.mkdir(www)
        for i in range(3):
            with open(os.path.join(www, f"b{i}"), "w") as f:
                f.write("x" * (100 + i))
        port = free_port()
        with Collector(self.tmp) as col:
            self.spawn([PYTHON, "-m", "http.server", "--bind", "127.0.0.1", str(port)], cwd=www,
                       env=agent_env(col.endpoint, app="back", mode="http"), stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
            wait_port(port)
            urls = [f"http://127.0.0.1:{port}/b{i}" for i in range(3)]
            r = subprocess.run([CURL, "-s", "-o", "/dev/null", *urls], env=agent_env(col.endpoint, app="front", mode="http"),
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            wait_transactions(col.db, 3)
            # curl's container is sent at its exit; wait until its calls are linked to their callees.
            wait_for(lambda: sum(1 for s in show_json(col.db, "--unattributed", "--app", "front")
                                 if s["kind"] == "HTTP_CALL" and s["callee_tx_id"]) == 3,
                     what="3 linked unattributed calls of curl")
        back = show_json(col.db, "--last", "100")
        self.assertEqual(sorted(t["name"] for t in back), [f"GET /b{i}" for i in range(3)])
        self.assertEqual({t["app"] for t in back}, {"back"})  # curl's container is no transaction
        self.assertEqual(show_json(col.db, "--last", "10", "--app", "front"), [])

        steps = show_json(col.db, "--unattributed", "--app", "front")
        calls = [s for s in steps if s["kind"] == "HTTP_CALL"]
        self.assertEqual(sorted(c["text"] for c in calls), urls)
        self.assertEqual(sorted(c["callee_tx_id"] for c in calls), sorted(t["txid"] for t in back))
        by_txid = {t["txid"]: t for t in back}
        for c in calls:
            self.assertEqual(c["status"], 200)
            self.assertEqual(c["app"], "front")
            self.assertEqual(by_txid[c["callee_tx_id"]]["name"], "GET " + c["text"].split(str(port))[1])
        self.assertTrue(any(s["kind"] == "SOCKET" for s in steps), [s["kind"] for s in steps])
        self.assertEqual(show_json(col.db, "--id", steps[0]["container_tx_id"])[0]["kind"], "unattributed")

        out = subprocess.run([TXRAY, "show", "--db", col.db, "--unattributed", "--app", "front"], check=True,
                             capture_output=True, text=True).stdout
        self.assertRegex(out.splitlines()[0], rf"^UNATTRIBUTED  app=front  {len(steps)} steps: .*HTTP_CALL 3")

        report = json.loads(subprocess.run([TXRAY, "report", "--db", col.db, "--format", "json"], check=True,
                                           capture_output=True, text=True).stdout)
        self.assertEqual(report["summary"]["transactions"], 3)
        self.assertEqual(report["summary"]["apps"], ["back"])
        everywhere = show_json(col.db, "--unattributed")
        self.assertEqual(report["summary"]["unattributed_steps"], sum(s["count"] for s in everywhere))
        front = json.loads(subprocess.run([TXRAY, "report", "--db", col.db, "--format", "json", "--app", "front"],
                                          check=True, capture_output=True, text=True).stdout)["summary"]
        self.assertEqual((front["transactions"], front["unattributed_steps"]), (0, len(steps)))
        self.assertEqual(front["unattributed_by_kind"]["HTTP_CALL"], 3)
