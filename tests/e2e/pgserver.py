"""A throw-away PostgreSQL 15 server for end-to-end tests.

initdb into a fresh temporary folder, pg_ctl start on a free TCP port of 127.0.0.1 (and a Unix socket in
that folder), stop with `pg_ctl stop -m immediate` and remove the folder. PostgreSQL refuses to run as
root, so as root the server programs run as the `postgres` user (runuser), the folder being given to it.
The server itself never runs under the agent: the tests preload the agent into the clients only.
PgServer(ssl=True) serves TLS only on TCP (ssl=on with a self-signed certificate, pg_hba `hostssl`: a
client that does not ask for TLS is refused); the Unix socket stays plain.

    with PgServer() as pg:
        subprocess.run([PSQL, *pg.conn_args(), "-c", "select 1"], env=...)
"""
import os
import pwd
import shutil
import subprocess
import tempfile

from tlscert import self_signed
from txraytest import free_port, wait_for

PG_BIN = "/usr/lib/postgresql/15/bin"
PSQL = os.path.join(PG_BIN, "psql")  # the real binary (/usr/bin/psql is a Perl wrapper)
PGBENCH = os.path.join(PG_BIN, "pgbench")


def available():
    """True when the PostgreSQL 15 server and client programs are installed."""
    return all(os.access(os.path.join(PG_BIN, p), os.X_OK) for p in ("initdb", "pg_ctl", "postgres", "psql"))


class PgServer:
    def __init__(self, ssl=False):
        self.ssl = ssl
        self.dir = None
        self.port = None
        self.user = "postgres"
        self.database = "postgres"

    # --- running the server's own programs (as postgres when we are root) ---
    def _as_server_user(self, args):
        if os.geteuid() == 0:
            return ["runuser", "-u", "postgres", "--", *args]
        return args

    def _run(self, args, **kw):
        r = subprocess.run(self._as_server_user(args), capture_output=True, text=True, env=self._server_env(), **kw)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}\n{self._log()}")
        return r

    def _server_env(self):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)  # the server is not what is traced
        env["LC_ALL"] = "C"
        return env

    def _log(self):
        try:
            with open(os.path.join(self.dir, "log")) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def start(self):
        if not available():
            raise RuntimeError(f"PostgreSQL 15 is not installed in {PG_BIN} (scripts/install-deps.sh installs it)")
        self.dir = tempfile.mkdtemp(prefix="txray-pg-")
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        os.chmod(self.dir, 0o700)
        data = os.path.join(self.dir, "data")
        self._run([f"{PG_BIN}/initdb", "-D", data, "-A", "trust", "-U", self.user, "--no-sync", "-E", "UTF8"])
        tls = ""
        if self.ssl:
            pw = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
            cert, key = self_signed(self.dir, (pw.pw_uid, pw.pw_gid) if pw else None)
            tls = f" -c ssl=on -c ssl_cert_file={cert} -c ssl_key_file={key}"
            with open(os.path.join(data, "pg_hba.conf"), "w") as f:
                f.write("local all all trust\nhostssl all all 127.0.0.1/32 trust\n")
        for attempt in range(5):
            self.port = free_port()
            opts = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
                    f"-c synchronous_commit=off -c full_page_writes=off -c max_connections=20{tls}")
            r = subprocess.run(self._as_server_user([f"{PG_BIN}/pg_ctl", "-D", data, "-o", opts,
                                                     "-l", os.path.join(self.dir, "log"), "-w", "-t", "60", "start"]),
                               capture_output=True, text=True, env=self._server_env())
            if r.returncode == 0:
                break
            if "could not bind" not in self._log() or attempt == 4:
                raise RuntimeError(f"pg_ctl start failed:\n{r.stdout}\n{r.stderr}\n{self._log()}")
        wait_for(lambda: self.psql_ok(), timeout=30, what="PostgreSQL accepting queries")
        return self

    def psql_ok(self):
        r = subprocess.run([PSQL, *self.conn_args(), "-Atc", "select 1"], capture_output=True, text=True,
                           env=self.client_env())
        return r.returncode == 0 and r.stdout.strip() == "1"

    def stop(self):
        if not self.dir:
            return
        data = os.path.join(self.dir, "data")
        if os.path.exists(os.path.join(data, "postmaster.pid")):
            subprocess.run(self._as_server_user([f"{PG_BIN}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"]),
                           capture_output=True, text=True, env=self._server_env())
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # --- for clients ---
    def conn_args(self):
        """psql/pgbench options reaching this server over TCP (so the agent's socket counters see it)."""
        return ["-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, "-d", self.database]

    def client_env(self, base=None):
        env = dict(base if base is not None else os.environ)
        env.setdefault("LC_ALL", "C")
        env["PGCONNECT_TIMEOUT"] = "10"
        env["PSQLRC"] = "/dev/null"  # no user's ~/.psqlrc running extra queries
        return env
