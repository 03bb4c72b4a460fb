"""txray runtime shim for grpcio (Python: the sync API and grpc.aio; loaded by _txray_hints.py when the program imports grpc).

A gRPC server's own outbound calls are written by grpc's C core from whichever thread holds the
transport's lock, so the agent cannot tell from the writing thread which inbound request a call was
made for (docs/http2.md, "Which request a call belongs to"). The handler can: its inbound request is the
one whose `traceparent` its context's invocation metadata holds. So:
- grpc's server runs each handler (and each step of a streaming response) with the inbound request's
  trace context in a context variable, when the caller sent a `traceparent`: grpc._server's
  `_call_behavior` and `_take_response_from_response_iterator` wrapped (both take the RPC event, whose
  invocation metadata holds the caller's traceparent); on a grpcio without them, a server interceptor
  put first into every `grpc.server(...)` (public API, through grpc's interceptor pipeline);
- the client multi-callables of `grpc._channel` (unary/stream x unary/stream: `__call__`, `with_call`,
  `future`) made while that variable is set ask the agent for a span of that request (hint `S<parent>`,
  docs/agent.md "Runtime hints") and add `traceparent: 00-<trace>-<span>-<flags>` to the call's metadata
  (the inbound flags); the agent adds the request's tracestate and baggage beside it and files the HTTP/2
  row whose HEADERS carry that span under the request, whichever thread writes it.
A call whose metadata already has a traceparent, made outside a handler, or for which the agent names no
span, is left exactly as it was (the agent inserts its own traceparent; the row is unattributed but
linked). Threads a handler starts itself carry the context only when run in a copy of it
(`contextvars.copy_context().run`, as `asyncio.to_thread` does). `grpc.aio`: the client multi-callables'
`__call__` likewise, and a server interceptor (first in `grpc.aio.server(...)`) runs coroutine and
async-generator handlers with their inbound request in the context (plain functions, which grpc.aio runs
on its thread pool, are not covered).
Nothing here may ever raise into the program.
"""
import contextvars

_hint = None         # _txray_hints._hint
_inbound = contextvars.ContextVar("txray_grpc_inbound", default=None)  # (trace hex32 bytes, parent hex16 bytes)
_NO_SPAN = b"0000000000000000"
_HEX = frozenset(b"0123456789abcdef")


def _parse(tp):
    """The (trace id, parent id) of a traceparent value as ASCII bytes, or None."""
    if isinstance(tp, str):
        tp = tp.encode("ascii", "replace")
    if not isinstance(tp, bytes) or len(tp) < 55 or tp[2:3] != b"-" or tp[35:36] != b"-" or tp[52:53] != b"-":
        return None
    trace, parent = tp[3:35].lower(), tp[36:52].lower()
    if not (set(trace) <= _HEX and set(parent) <= _HEX) or parent == _NO_SPAN:
        return None
    # The flags go on as received (sampled and random; the reserved bits as 0): the agent names a span
    # only for a request whose traceparent it accepted, so these are the flags it kept.
    try:
        flags = b"%02x" % (int(tp[53:55], 16) & 0x03)
    except ValueError:
        flags = b"01"
    return (trace, parent, flags)


_MAX_BAGGAGE = 1024  # as the agent's own limit (tracecontext/tracestate.h): longer is not sent at all


def _inbound_of(metadata):
    """(trace, parent, flags, baggage) of a request's metadata: the first three None when it has no
    traceparent the shim can use, baggage (its lines joined by ",") None when none; None when neither."""
    try:
        tp, bags = None, []
        for k, v in metadata or ():
            if k == "traceparent" and tp is None:
                tp = _parse(v) or False
            elif k == "baggage":
                bags.append(v.strip() if isinstance(v, str) else "")
        bag = ",".join(b for b in bags if b) or None
        if bag is not None and (len(bag) > _MAX_BAGGAGE or not bag.isprintable()):
            bag = None
        if tp:
            return tp + (bag,)
        if bag is not None:
            # No traceparent of its own: the agent cannot name spans for it, but its calls still pass the
            # caller's baggage on unchanged (W3C Baggage), added here as the agent would.
            return (None, None, None, bag)
    except Exception:
        pass
    return None


def _with_inbound(orig):
    """grpc._server's function that runs a handler (or takes a streaming response's next item) from the
    RPC event, run with that event's inbound request in the context variable."""
    def run(rpc_event, *args, **kwargs):
        try:
            req = _inbound_of(rpc_event.invocation_metadata)
        except Exception:
            req = None
        if req is None:
            return orig(rpc_event, *args, **kwargs)
        token = _inbound.set(req)
        try:
            return orig(rpc_event, *args, **kwargs)
        finally:
            _inbound.reset(token)
    run._txray_wrapped = True
    run.__name__ = getattr(orig, "__name__", "run")
    return run


def _patch_server_internals():
    """grpcio's own server loop (grpc._server, 1.x): its handler call and its streaming-response step
    wrapped directly — a server interceptor does the same through grpc's interceptor pipeline (one more
    layer of Python per RPC; no difference was measurable on a shared 2-core VM). False when this grpcio
    has no such functions."""
    try:
        from grpc import _server
    except Exception:
        return False
    names = ("_call_behavior", "_take_response_from_response_iterator")
    if not all(callable(getattr(_server, n, None)) for n in names):
        return False
    for n in names:
        orig = getattr(_server, n)
        if not getattr(orig, "_txray_wrapped", False):
            setattr(_server, n, _with_inbound(orig))
    return True


def _run_unary(fn, req):
    def behavior(request, context):
        token = _inbound.set(req)
        try:
            return fn(request, context)
        finally:
            _inbound.reset(token)
    return behavior


def _run_stream(fn, req):
    def behavior(request, context):
        token = _inbound.set(req)
        try:
            it = iter(fn(request, context))
        finally:
            _inbound.reset(token)
        while True:
            token = _inbound.set(req)
            try:
                item = next(it)
            except StopIteration:
                return
            finally:
                _inbound.reset(token)
            yield item
    return behavior


def _make_interceptor(grpc):
    class TxrayServerInterceptor(grpc.ServerInterceptor):
        def intercept_service(self, continuation, details):
            handler = continuation(details)
            if handler is None:
                return None
            req = _inbound_of(details.invocation_metadata)
            if req is None:
                return handler
            try:
                if handler.unary_unary is not None:
                    return handler._replace(unary_unary=_run_unary(handler.unary_unary, req))
                if handler.stream_unary is not None:
                    return handler._replace(stream_unary=_run_unary(handler.stream_unary, req))
                if handler.unary_stream is not None:
                    return handler._replace(unary_stream=_run_stream(handler.unary_stream, req))
                if handler.stream_stream is not None:
                    return handler._replace(stream_stream=_run_stream(handler.stream_stream, req))
            except Exception:   # a handler type of its own (not grpc's namedtuple): left as it is
                pass
            return handler
    return TxrayServerInterceptor()


def _make_aio_interceptor(grpc, aio):
    import inspect

    def run_coroutine(fn, req):
        async def behavior(request, context):
            token = _inbound.set(req)
            try:
                return await fn(request, context)
            finally:
                _inbound.reset(token)
        return behavior

    def run_async_gen(fn, req):
        async def behavior(request, context):
            token = _inbound.set(req)
            try:
                async for item in fn(request, context):
                    yield item
            finally:
                _inbound.reset(token)
        return behavior

    class TxrayAioServerInterceptor(aio.ServerInterceptor):
        async def intercept_service(self, continuation, details):
            handler = await continuation(details)
            if handler is None:
                return None
            req = _inbound_of(details.invocation_metadata)
            if req is None:
                return handler
            try:
                for name in ("unary_unary", "unary_stream", "stream_unary", "stream_stream"):
                    fn = getattr(handler, name)
                    if fn is None:
                        continue
                    # Kept as the kind it is: grpc runs a plain function on its thread pool.
                    if inspect.iscoroutinefunction(fn):
                        return handler._replace(**{name: run_coroutine(fn, req)})
                    if inspect.isasyncgenfunction(fn):
                        return handler._replace(**{name: run_async_gen(fn, req)})
                    return handler
            except Exception:
                pass
            return handler
    return TxrayAioServerInterceptor()


def _patch_aio(grpc):
    """grpc.aio: its client multi-callables (`__call__`; the call is written later from the event loop,
    which does not matter: the agent goes by the span) and an interceptor first in `grpc.aio.server`,
    which runs coroutine and async-generator handlers with their inbound request in the context."""
    from grpc import aio
    from grpc.aio import _channel as aio_channel
    for cls in list(vars(aio_channel).values()):
        if isinstance(cls, type) and cls.__name__.endswith("MultiCallable"):
            orig = vars(cls).get("__call__")
            if orig is not None and not getattr(orig, "_txray_wrapped", False):
                setattr(cls, "__call__", _wrap_call(orig))
    orig_server = aio.server
    if getattr(orig_server, "_txray_wrapped", False):
        return
    aio.server = _server_with_interceptor(orig_server, _make_aio_interceptor(grpc, aio))


def _server_with_interceptor(orig_server, interceptor):
    """orig_server (grpc.server or grpc.aio.server), with interceptor put first. Both take
    (pool, handlers=None, interceptors=None, ...): the interceptors are the third argument."""
    def server(*args, **kwargs):
        try:
            if len(args) >= 3:
                args = args[:2] + ((interceptor,) + tuple(args[2] or ()),) + args[3:]
            else:
                kwargs["interceptors"] = (interceptor,) + tuple(kwargs.get("interceptors") or ())
        except Exception:
            pass
        return orig_server(*args, **kwargs)
    server._txray_wrapped = True
    server.__name__ = orig_server.__name__
    server.__doc__ = orig_server.__doc__
    return server


def _with_traceparent(req, metadata):
    """metadata with a traceparent naming a span of request req, or None to leave the call alone."""
    try:
        md = tuple(metadata) if metadata is not None else ()
        for k, _ in md:
            if k == "traceparent":
                return None       # the program propagates its own context
        if req[0] is None:
            if any(k == "baggage" for k, _ in md):
                return None
            return md + (("baggage", req[3]),)
        span = _hint(b"S" + req[1])
        if not span or len(span) != 16 or span == _NO_SPAN:
            return None
        return md + (("traceparent", "00-%s-%s-%s" % (req[0].decode(), span.decode(), req[2].decode())),)
    except Exception:
        return None


def _wrap_call(orig):
    # Every multi-callable method takes (request or request_iterator, timeout=None, metadata=None, ...).
    def call(self, request, *args, **kwargs):
        req = _inbound.get()
        if req is not None:
            if len(args) >= 2:
                md = _with_traceparent(req, args[1])
                if md is not None:
                    args = (args[0], md) + args[2:]
            else:
                md = _with_traceparent(req, kwargs.get("metadata"))
                if md is not None:
                    kwargs["metadata"] = md
        return orig(self, request, *args, **kwargs)
    call._txray_wrapped = True
    call.__name__ = getattr(orig, "__name__", "call")
    call.__doc__ = getattr(orig, "__doc__", None)
    return call


def patch(grpc, hint):
    """Patches grpc (the module, just imported). Returns True when something was patched."""
    global _hint
    _hint = hint
    from grpc import _channel
    kinds = tuple(getattr(grpc, n) for n in ("UnaryUnaryMultiCallable", "UnaryStreamMultiCallable",
                                              "StreamUnaryMultiCallable", "StreamStreamMultiCallable")
                  if hasattr(grpc, n))
    patched = 0
    for cls in list(vars(_channel).values()):
        if not (isinstance(cls, type) and issubclass(cls, kinds)):
            continue
        for name in ("__call__", "with_call", "future"):
            orig = vars(cls).get(name)
            if orig is not None and not getattr(orig, "_txray_wrapped", False):
                setattr(cls, name, _wrap_call(orig))
                patched += 1
    if not patched:
        return False
    if hint(b"S") is None:      # the agent takes no span hints: leave servers alone
        return False
    try:
        _patch_aio(grpc)
    except Exception:
        pass
    if _patch_server_internals():
        return True
    orig_server = grpc.server
    if getattr(orig_server, "_txray_wrapped", False):
        return True
    grpc.server = _server_with_interceptor(orig_server, _make_interceptor(grpc))
    return True
