"""txray runtime shim for Python asyncio (3.8+, tested on 3.11; stdlib only).

Loaded by the sitecustomize.py next to it (`txray run` puts this folder first on PYTHONPATH). It tells the
preloaded agent which inbound request the outbound work of an asyncio event loop belongs to, through the
hint protocol of docs/agent.md ("Runtimes"): a 32-byte buffer written with libc write() to the reserved
descriptor 2147483600, which the agent's write hook answers in place without a system call. Without the
agent the kernel answers EBADF: the probe at load fails and nothing is patched.

What it does (only once `asyncio` is imported; never per callback):
- a thread that runs an event loop says `Hpython` once;
- servers (`loop.create_server`, and so `asyncio.start_server`): the protocol's `connection_made`,
  `data_received`, `buffer_updated` and `eof_received` run with the connection's inbound descriptor in a
  context variable, so every task and callback they create carries it (a streams server's
  client_connected_cb task is created in `connection_made`);
- a task created in such a context while a request is in flight on that connection (`R<fd>` answers its
  token) carries the token as well, so if it outlives its request its steps are unattributed, never
  another request's (the connection's own task, created before any request, goes without);
- inside such a context, the synchronous parts of outbound work are wrapped in `E<target>` ... `L`
  (target: `<fd>`, or `<fd>:<token>` in a task that carries a token): the
  `connect()` of `loop.sock_connect` / `create_connection` / `open_connection`, the immediate send of a
  socket transport's `write()` (a transport other than the inbound connection itself), and the first
  send of `loop.sock_sendall`;
- `loop.run_in_executor` (and so `asyncio.to_thread`, and the loop's `getaddrinfo`): `C<fd>` on the loop
  thread captures the request, the worker runs the function between `A<handle>` and `D<handle>`; a
  function that never runs has its capture released from the loop (`D` is sent exactly once).
And when the program imports grpc (unless TXRAY_GRPC_HINTS=0): _txray_grpc.py, which names a gRPC
server's outbound calls by the inbound request they were made for (hint `S`).
Nothing here may ever raise into the program: a hint that cannot be sent is skipped.
"""
import errno
import os
import sys
import threading

HINT_FD = 2147483600
NO_HANDLE = b"0000000000000000"

_active = False
_sent = 0
_local = threading.local()   # .hello: this thread said H; .entered: inside E ... L
_inbound = None              # contextvars.ContextVar: (inbound fd, hint target b"<fd>" or b"<fd>:<token>")


def active():
    return _active


def hints_sent():
    return _sent


def _hint(msg):
    """Sends one hint (bytes); returns the agent's reply, or None (refused, or no agent: then off)."""
    global _active, _sent
    if not _active:
        return None
    b = bytearray(32)
    b[:len(msg)] = msg
    try:
        os.write(HINT_FD, b)
    except OSError as e:
        if e.errno != errno.EINVAL:
            _active = False          # EBADF: no agent in this process
        return None
    _sent += 1
    end = b.find(0)
    return bytes(b[:end if end >= 0 else 32])


class _Entered:
    """`with _Entered(req):` steps of this thread belong to the request req (an _inbound value) until the
    block ends (E ... L; never nested)."""
    __slots__ = ("on",)

    def __init__(self, req):
        self.on = False
        if req is not None and _active and not getattr(_local, "entered", False):
            if _hint(b"E" + req[1]) is not None:
                self.on = _local.entered = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.on:
            _local.entered = False
            _hint(b"L")
        return False


def _wrap_protocol(protocol):
    """Makes the protocol's callbacks run with the connection's inbound fd in the context."""
    fd_cell = [None]
    var = _inbound

    def around(orig):
        def call(*args):
            req = fd_cell[0]
            if req is None:
                return orig(*args)
            token = var.set(req)
            try:
                return orig(*args)
            finally:
                var.reset(token)
        return call

    orig_made = protocol.connection_made

    def connection_made(transport):
        try:
            sock = transport.get_extra_info("socket")
            fd = sock.fileno() if sock is not None else -1
            fd_cell[0] = (fd, b"%d" % fd) if fd >= 0 else None
        except Exception:
            fd_cell[0] = None
        return around(orig_made)(transport)

    try:
        protocol.connection_made = connection_made
        for name in ("data_received", "buffer_updated", "eof_received"):
            orig = getattr(protocol, name, None)
            if orig is not None:
                setattr(protocol, name, around(orig))
    except (AttributeError, TypeError):   # a protocol with __slots__: left as it is
        pass
    return protocol


class _Capture:
    """One run_in_executor capture: released exactly once, by the worker or, if it never ran, the loop."""
    __slots__ = ("cell",)

    def __init__(self, handle):
        self.cell = [handle]

    def take(self):
        try:
            return self.cell.pop()      # atomic under the GIL: only one taker gets the handle
        except IndexError:
            return None

    def run(self, func, args):
        handle = self.take()
        if handle is None:
            return func(*args)
        _hint(b"A" + handle)           # "NO" (the request is over): runs unattached, released below
        try:
            return func(*args)
        finally:
            _hint(b"D" + handle)

    def release_unused(self, _fut=None):
        handle = self.take()
        if handle is not None:
            _hint(b"D" + handle)


def _first_step(coro, req):
    """An awaitable running `coro` with its first step (the synchronous part) inside E ... L."""
    class FirstStep:
        def __await__(self):
            it = coro.__await__()
            with _Entered(req):
                try:
                    out = it.send(None)
                except StopIteration as stop:
                    return stop.value
            while True:
                try:
                    got = yield out
                except GeneratorExit:
                    it.close()
                    raise
                except BaseException as exc:
                    try:
                        out = it.throw(exc)
                    except StopIteration as stop:
                        return stop.value
                else:
                    try:
                        out = it.send(got)
                    except StopIteration as stop:
                        return stop.value
    return FirstStep()


def _patch(obj, name, make):
    orig = getattr(obj, name, None)
    if orig is None or getattr(orig, "_txray_wrapped", False):
        return
    new = make(orig)
    new._txray_wrapped = True
    new.__name__ = getattr(orig, "__name__", name)
    new.__doc__ = getattr(orig, "__doc__", None)
    setattr(obj, name, new)


def _patch_asyncio():
    global _inbound
    import contextvars
    from asyncio import base_events, selector_events
    _inbound = contextvars.ContextVar("txray_inbound_request", default=None)
    var = _inbound

    def make_run_forever(orig):
        def run_forever(self):
            if _active and not getattr(_local, "hello", False):
                _local.hello = True
                _hint(b"Hpython")
            return orig(self)
        return run_forever
    _patch(base_events.BaseEventLoop, "run_forever", make_run_forever)

    def make_create_server(orig):
        def create_server(self, protocol_factory, *args, **kwargs):
            if _active:
                factory = protocol_factory
                protocol_factory = lambda: _wrap_protocol(factory())   # noqa: E731
            return orig(self, protocol_factory, *args, **kwargs)
        return create_server
    _patch(base_events.BaseEventLoop, "create_server", make_create_server)

    def make_run_in_executor(orig):
        def run_in_executor(self, executor, func, *args):
            req = var.get()
            if req is None or not _active:
                return orig(self, executor, func, *args)
            handle = _hint(b"C" + req[1])  # C<fd>: the request in flight on fd; C<fd>:<token>
            if not handle or handle == NO_HANDLE:
                return orig(self, executor, func, *args)
            cap = _Capture(handle)
            try:
                fut = orig(self, executor, cap.run, func, args)
            except BaseException:
                cap.release_unused()
                raise
            fut.add_done_callback(cap.release_unused)
            return fut
        return run_in_executor
    _patch(base_events.BaseEventLoop, "run_in_executor", make_run_in_executor)

    def make_create_task(orig):
        def create_task(self, coro, **kwargs):
            req = var.get()
            if req is None or not _active or b":" in req[1] or kwargs.get("context") is not None:
                return orig(self, coro, **kwargs)
            token = _hint(b"R" + req[1])
            if not token or len(token) != 16 or token == NO_HANDLE:
                return orig(self, coro, **kwargs)
            reset = var.set((req[0], req[1] + b":" + token))
            try:
                return orig(self, coro, **kwargs)   # the task copies the context now
            finally:
                var.reset(reset)
        return create_task
    _patch(base_events.BaseEventLoop, "create_task", make_create_task)

    def make_sock_connect(orig):
        def _sock_connect(self, fut, sock, address):
            req = var.get()
            if req is None:
                return orig(self, fut, sock, address)
            with _Entered(req):
                return orig(self, fut, sock, address)
        return _sock_connect
    _patch(selector_events.BaseSelectorEventLoop, "_sock_connect", make_sock_connect)

    def make_sock_sendall(orig):
        def sock_sendall(self, sock, data):
            req = var.get()
            if req is None or not _active:
                return orig(self, sock, data)
            return _first_step(orig(self, sock, data), req)
        return sock_sendall
    _patch(selector_events.BaseSelectorEventLoop, "sock_sendall", make_sock_sendall)

    def make_write(orig):
        def write(self, data):
            req = var.get()
            if req is None or req[0] == self._sock_fd:
                return orig(self, data)
            with _Entered(req):
                return orig(self, data)
        return write
    cls = selector_events._SelectorSocketTransport
    _patch(cls, "write", make_write)
    if "writelines" in vars(cls):   # 3.12+: its own writelines (sendmsg), not write()
        _patch(cls, "writelines", make_write)


class _AsyncioWatcher:
    """A one-shot meta path finder: patches asyncio right after it is first imported (so programs that
    never use asyncio never import it because of txray). With another name and patch function: the same
    for that module (grpc)."""

    def __init__(self, module="asyncio", patch=None):
        self.module = module
        self.patch = patch or (lambda m: _patch_asyncio())

    def find_spec(self, name, path=None, target=None):
        if name != self.module:
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        orig_exec = loader.exec_module

        patch = self.patch

        def exec_module(module):
            orig_exec(module)
            try:
                patch(module)
            except Exception:
                pass
        loader.exec_module = exec_module
        return spec


def install():
    """Probes for the agent; if it answers, patches asyncio (now or when it is imported)."""
    global _active
    if os.environ.get("TXRAY_RUNTIME_HINTS") == "0" or _active:
        return
    _active = True
    if _hint(b"L") is None and not _active:   # EBADF: no agent
        return
    if "asyncio.base_events" in sys.modules:
        _patch_asyncio()
    else:
        sys.meta_path.insert(0, _AsyncioWatcher())
    if os.environ.get("TXRAY_GRPC_HINTS") == "0":
        return
    if "grpc" in sys.modules:
        _patch_grpc(sys.modules["grpc"])
    else:
        sys.meta_path.insert(0, _AsyncioWatcher("grpc", _patch_grpc))


def _patch_grpc(grpc):
    """grpcio: a server's outbound calls carry the span of the inbound request they were made for
    (_txray_grpc.py, next to this file)."""
    if not _active:
        return
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    try:
        import _txray_grpc
    finally:
        sys.path.remove(here)
    _txray_grpc.patch(grpc, _hint)
