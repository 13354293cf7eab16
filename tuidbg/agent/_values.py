"""One line for a value at a stop, PyTorch-aware, without calling a user's ``__repr__``.

A tensor reads ``Tensor float32 [4, 8] cpu`` (its class, dtype, shape, device; then the layout when
not strided, ``requires_grad`` and the ``grad_fn``'s name when set): metadata only, read from the
tensor's own fields (``torch._C.TensorBase``'s getters with subclasses' ``__torch_function__``
switched off). No data is read, no kernel runs, a CUDA device is never synchronized, and a tensor
on the ``meta`` device reads like any other. A module reads ``Linear (40 params, float32, cpu,
train)``, found through its ``_parameters``/``_modules`` dictionaries, not its attributes; an
optimizer its class, parameter groups and the first group's hyper-parameters. Everything else is
``repr()`` as before.

The agent never imports torch: these apply when the program has (``sys.modules``). Standard
library only, Python 3.9 syntax.
"""

import sys

from ._exceptions import safe_repr

MAX_MODULES = 10000  # a module tree walked for its summary, at most


def value_line(value, limit):
    """``value`` on one line, at most ``limit`` characters."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            text = _torch_line(torch, value)
        except Exception as exc:  # never the user's problem: say so and go on
            text = "<%s: %s: %s>" % (type(value).__name__, type(exc).__name__, exc)
        if text is not None:
            return text if len(text) <= limit else text[:limit] + "..."
    return safe_repr(value, limit)


def _mro(value):
    return type(value).__mro__


def _torch_line(torch, value):
    base = getattr(getattr(torch, "_C", None), "TensorBase", None)
    mro = _mro(value)
    if base is not None and base in mro:
        return tensor_line(torch, value)
    nn = sys.modules.get("torch.nn.modules.module")
    if nn is not None and getattr(nn, "Module", None) in mro:
        return module_line(torch, value)
    optim = sys.modules.get("torch.optim.optimizer")
    if optim is not None and getattr(optim, "Optimizer", None) in mro:
        return optimizer_line(value)
    return None


def _no_torch_function(torch):
    """A context in which a tensor subclass's ``__torch_function__`` is not called."""
    disable = getattr(torch._C, "DisableTorchFunctionSubclass", None)
    if disable is None:
        disable = getattr(torch._C, "DisableTorchFunction")
    return disable()


def tensor_meta(torch, t):
    """(dtype, shape, device, layout, requires_grad, grad_fn name) of a tensor, metadata only."""
    base = torch._C.TensorBase
    with _no_torch_function(torch):
        dtype = str(base.dtype.__get__(t)).replace("torch.", "")
        shape = list(base.shape.__get__(t))
        device = str(base.device.__get__(t))
        layout = str(base.layout.__get__(t)).replace("torch.", "")
        grad = bool(base.requires_grad.__get__(t))
        fn = base.grad_fn.__get__(t)
    return dtype, shape, device, layout, grad, (type(fn).__name__ if fn is not None else "")


def tensor_line(torch, t):
    dtype, shape, device, layout, grad, fn = tensor_meta(torch, t)
    parts = [type(t).__name__, dtype, "[%s]" % ", ".join(str(n) for n in shape), device]
    if layout != "strided":
        parts.append(layout)
    if fn:
        parts.append("grad_fn=" + fn)
    elif grad:
        parts.append("requires_grad")
    return " ".join(parts)


def _dict_of(obj, name):
    try:
        d = object.__getattribute__(obj, name)
    except AttributeError:
        return {}
    return d if isinstance(d, dict) else {}


def module_line(torch, m):
    count = 0
    dtypes = []
    devices = []
    seen = set()
    todo = [m]
    visited = 0
    while todo and visited < MAX_MODULES:
        mod = todo.pop()
        if id(mod) in seen:
            continue
        seen.add(id(mod))
        visited += 1
        for p in _dict_of(mod, "_parameters").values():
            if p is None or id(p) in seen:
                continue
            seen.add(id(p))
            dtype, shape, device, _layout, _grad, _fn = tensor_meta(torch, p)
            n = 1
            for s in shape:
                n *= s
            count += n
            if dtype not in dtypes:
                dtypes.append(dtype)
            if device not in devices:
                devices.append(device)
        todo.extend(c for c in _dict_of(mod, "_modules").values() if c is not None)
    try:
        training = bool(object.__getattribute__(m, "training"))
    except AttributeError:
        training = None
    parts = ["%s param%s" % ("{:,}".format(count), "" if count == 1 else "s")]
    if dtypes:
        parts.append("/".join(dtypes))
    if devices:
        parts.append("/".join(devices))
    if training is not None:
        parts.append("train" if training else "eval")
    more = " (more than %d modules: counted the first)" % MAX_MODULES if todo else ""
    return "%s (%s)%s" % (type(m).__name__, ", ".join(parts), more)


def optimizer_line(opt):
    try:
        groups = object.__getattribute__(opt, "param_groups")
    except AttributeError:
        groups = []
    if not isinstance(groups, list):
        groups = []
    hyper = []
    if groups and isinstance(groups[0], dict):
        for k, v in groups[0].items():
            if k == "params" or not isinstance(v, (int, float, bool, str, tuple, type(None))):
                continue
            hyper.append("%s=%s" % (k, safe_repr(v, 40)))
    n = len(groups)
    text = "%s (%d param group%s" % (type(opt).__name__, n, "" if n == 1 else "s")
    return text + (": " + ", ".join(hyper) if hyper else "") + ")"
