"""Values of PyTorch objects at a Python stop, read without user code (issue 13).

Runs inside the debugged program, stdlib only: torch is never imported here, only taken from
``sys.modules`` when the program already imported it. Tensor metadata comes from torch's C-level
accessors on ``torch._C.TensorBase`` with ``__torch_function__`` (subclasses' and modes') disabled, modules from
their ``_parameters``/``_modules``/``_buffers`` dicts read with ``object.__getattribute__``: no user
``__repr__``, ``__getattr__`` or ``__torch_function__`` runs, and describing a tensor reads no data.
Only a preview reads data: of a CPU tensor, bounded (``PREVIEW_CAP`` elements at most); of a tensor on
another device (cuda) only when asked (``device_data``), and the value says it synchronizes the device.

``describe(value)`` is the one line of a torch value (None for anything else: the caller keeps its repr);
``children(value, path, device_data)`` the children of the value reached by ``path`` (a list of child
names), each ``{"name", "type", "value", "expandable"}``. Other Python values expand too: containers and
objects, read without user code by ``_containers`` (its docstring says how), ``PAGE`` children at a time.
"""

import sys

from . import _containers

_MRO = type.__dict__["__mro__"]

PREVIEW_CAP = 100000  # elements a preview reads at most (a bigger tensor previews its first elements)
EDGE = 5  # first and last values a preview shows
CHILD_CAP = 500
PAGE = 100  # children of a container or object listed at a time


def _torch():
    return sys.modules.get("torch")


def _short(obj):
    text = str(obj)
    return text[6:] if text.startswith("torch.") else text


def _is_instance(value, name, torch):
    """Whether value's type derives from a torch class, looked up without importing anything."""
    cls = {"Tensor": torch._C.TensorBase, "Size": torch.Size, "dtype": torch.dtype, "device": torch.device}.get(name)
    if cls is None:
        mod = {"Module": "torch.nn.modules.module", "Optimizer": "torch.optim.optimizer"}[name]
        m = sys.modules.get(mod)
        cls = getattr(m, name, None) if m is not None else None
    if cls is None:
        return False
    for c in _MRO.__get__(type(value)):  # (no __instancecheck__, __class__, metaclass attribute or __eq__ of theirs runs)
        if c is cls:
            return True
    return False


class _NoTorchFunction:
    """torch._C.DisableTorchFunction (subclasses' __torch_function__ and torch function modes both off),
    else DisableTorchFunctionSubclass, when this torch has either."""

    def __init__(self, torch):
        self.cm = getattr(torch._C, "DisableTorchFunction", None) or getattr(torch._C, "DisableTorchFunctionSubclass", None)
        self.cm = self.cm() if self.cm is not None else None

    def __enter__(self):
        if self.cm is not None:
            self.cm.__enter__()

    def __exit__(self, *exc):
        if self.cm is not None:
            self.cm.__exit__(*exc)


def _meta(t, torch):
    """{name: metadata} of a tensor, from C accessors (no data read, no user code)."""
    B = torch._C.TensorBase
    with _NoTorchFunction(torch):
        m = {"dtype": B.dtype.__get__(t), "shape": tuple(B.size(t)), "device": B.device.__get__(t),
             "layout": B.layout.__get__(t), "requires_grad": B.requires_grad.__get__(t),
             "grad_fn": B.grad_fn.__get__(t), "is_leaf": B.is_leaf.__get__(t), "numel": B.numel(t),
             "element_size": B.element_size(t), "version": B._version.__get__(t)}
        if m["layout"] is torch.strided:
            m["stride"] = tuple(B.stride(t))
            m["contiguous"] = B.is_contiguous(t)
            m["storage_offset"] = B.storage_offset(t)
    return m


def _tensor_line(t, torch):
    m = _meta(t, torch)
    param = getattr(getattr(torch, "nn", None), "Parameter", None)
    head = "Parameter" if param is not None and param in type(t).__mro__ else "Tensor"
    cls = type(t)
    if head == "Tensor" and cls is not torch.Tensor:
        head = "Tensor(%s)" % cls.__name__
    parts = [head, _short(m["dtype"]), "[%s]" % ", ".join(str(d) for d in m["shape"]), _short(m["device"])]
    if m["layout"] is not torch.strided:
        parts.append(_short(m["layout"]))
    if m["grad_fn"] is not None:
        parts.append("grad_fn=%s" % type(m["grad_fn"]).__name__)
    elif m["requires_grad"]:
        parts.append("requires_grad")
    return " ".join(parts)


def _module_line(mod, torch):
    params = _module_params(mod)
    count = 0
    devices, dtypes = [], []
    for _, p in params:
        m = _meta(p, torch)
        count += m["numel"]
        for seen, v in ((devices, _short(m["device"])), (dtypes, _short(m["dtype"]))):
            if v not in seen:
                seen.append(v)
    training = object.__getattribute__(mod, "__dict__").get("training")
    return "%s params=%s %s %s %s" % (type(mod).__name__, "{:,}".format(count), ",".join(devices) or "-",
                                     ",".join(dtypes) or "-", "train" if training else "eval")


def _dict_of(obj, name):
    d = object.__getattribute__(obj, "__dict__").get(name)
    return d if isinstance(d, dict) else {}


def _module_params(mod, prefix=""):
    """[(dotted name, parameter)] of a module tree, each parameter once, from the raw dicts."""
    out, seen, stack = [], set(), [(prefix, mod)]
    while stack:
        pre, m = stack.pop()
        for name, p in _dict_of(m, "_parameters").items():
            if p is not None and id(p) not in seen:
                seen.add(id(p))
                out.append((pre + name, p))
        for name, sub in reversed(list(_dict_of(m, "_modules").items())):
            if sub is not None:
                stack.append((pre + name + ".", sub))
    return out


def _optimizer_line(opt):
    groups = object.__getattribute__(opt, "__dict__").get("param_groups") or []
    n = sum(len(g.get("params", ())) for g in groups if isinstance(g, dict))
    return "%s groups=%d params=%d" % (type(opt).__name__, len(groups), n)


def describe(value):
    """The one line of a torch value, or None when it is not one (or torch is not loaded)."""
    torch = _torch()
    if torch is None or not hasattr(torch, "_C"):
        return None
    try:
        if _is_instance(value, "Tensor", torch):
            return _tensor_line(value, torch)
        if _is_instance(value, "Module", torch):
            return _module_line(value, torch)
        if _is_instance(value, "Optimizer", torch):
            return _optimizer_line(value)
        if _is_instance(value, "Size", torch):
            return "Size[%s]" % ", ".join(str(int(d)) for d in tuple.__iter__(value))
        if _is_instance(value, "dtype", torch) or _is_instance(value, "device", torch):
            return str(value)
    except Exception as exc:  # a half-built object: say so, never run its repr instead
        return "<%s: metadata unreadable: %s: %s>" % (type(value).__name__, type(exc).__name__, exc)
    return None


def _torch_expandable(value):
    torch = _torch()
    if torch is None:
        return False
    return any(_is_instance(value, k, torch) for k in ("Tensor", "Module", "Optimizer"))


def expandable(value):
    """Whether the value has children: a torch tensor, module or optimizer, a non-empty container, an object
    with instance attributes."""
    if _torch_expandable(value):
        return True
    try:
        return describe(value) is None and _containers.expandable(value)  # (a torch Size's line says it all)
    except Exception:  # (a value changing under us)
        return False


def line(value, limit=1000):
    """The one line of any value at a stop, made without user code: a torch value's, else as the Locals
    pane reads it from memory (``_containers.text``)."""
    return _containers.text(value, limit, describe)


def _leaf(name, text, type_name="", obj=None):
    return (name, obj, {"name": name, "type": type_name, "value": text, "expandable": obj is not None})


def _value_item(name, obj):
    line = describe(obj)
    if line is None:
        try:
            line = repr(obj) if isinstance(obj, (int, float, bool, str, tuple, type(None))) else "<%s>" % type(obj).__name__
        except Exception as exc:
            line = "<%s>" % type(exc).__name__
    return (name, obj if expandable(obj) else None,
            {"name": name, "type": type(obj).__name__, "value": line[:1000], "expandable": expandable(obj)})


def _tensor_children(t, torch, device_data):
    m = _meta(t, torch)
    out = []
    if "stride" in m:
        out.append(_leaf("stride", "(%s)" % ", ".join(str(s) for s in m["stride"])))
        out.append(_leaf("contiguous", str(m["contiguous"])))
        out.append(_leaf("storage_offset", str(m["storage_offset"])))
    out.append(_leaf("layout", _short(m["layout"])))
    out.append(_leaf("requires_grad", str(m["requires_grad"])))
    out.append(_leaf("grad_fn", type(m["grad_fn"]).__name__ if m["grad_fn"] is not None else "None"))
    out.append(_leaf("is_leaf", str(m["is_leaf"])))
    out.append(_leaf("numel", "%d (%d bytes)" % (m["numel"], m["numel"] * m["element_size"])))
    out.append(_leaf("_version", str(m["version"])))
    out.append(_leaf("values", _preview(t, m, torch, device_data)))
    return out


def _preview(t, m, torch, device_data):
    dev = m["device"].type
    if m["layout"] is not torch.strided:
        return "not shown (%s layout)" % _short(m["layout"])
    if dev != "cpu" and not (dev == "cuda" and device_data):
        return "not read (%s tensor; data stays on the device)" % dev
    if m["numel"] == 0:
        return "[]"
    B = torch._C.TensorBase
    dispatch_off = getattr(torch._C, "_DisableTorchDispatch", None)
    with _NoTorchFunction(torch):
        cm = dispatch_off() if dispatch_off is not None else None
        if cm is not None:
            cm.__enter__()
        try:
            n = m["numel"]
            head = B.reshape(B.__getitem__(B.detach(t), _prefix(m["shape"])), (-1,))  # (copies the prefix only)
            head = B.__getitem__(head, slice(0, PREVIEW_CAP))
            if dev != "cpu":
                head = B.cpu(head)  # synchronizes the device: asked for explicitly
            vals = B.tolist(head)
        finally:
            if cm is not None:
                cm.__exit__(None, None, None)
    shown = vals if len(vals) <= 2 * EDGE else vals[:EDGE] + ["..."] + vals[-EDGE:]
    text = "[%s]" % ", ".join(v if v == "..." else _num(v) for v in shown)
    if m["dtype"].is_floating_point and vals:
        finite = [v for v in vals if v == v]
        if finite:
            text += " min=%s max=%s mean=%s" % (_num(min(finite)), _num(max(finite)), _num(sum(finite) / len(finite)))
    if n > PREVIEW_CAP:
        text += " (first %d of %d elements)" % (PREVIEW_CAP, n)
    if dev != "cpu":
        text += " (read from %s: synchronized the device)" % dev
    return text


def _prefix(shape):
    """An index of a leading block of a tensor of this shape with at most PREVIEW_CAP elements that holds
    its first PREVIEW_CAP elements in order (so flattening a non-contiguous tensor copies that block only)."""
    index = []
    for k, d in enumerate(shape):
        rest = 1
        for e in shape[k + 1:]:
            rest *= e
        if d * rest <= PREVIEW_CAP:
            break
        if rest <= PREVIEW_CAP:
            index.append(slice(0, -(-PREVIEW_CAP // rest)))  # ceil: whole rows up to the cap
            break
        index.append(slice(0, 1))
    return tuple(index)


def _num(v):
    return ("%.6g" % v) if isinstance(v, float) else str(v)


def _module_children(mod):
    out = [_leaf("training", str(object.__getattribute__(mod, "__dict__").get("training")))]
    for name, sub in _dict_of(mod, "_modules").items():
        out.append(_value_item(name, sub))
    for name, p in _dict_of(mod, "_parameters").items():
        out.append(_value_item(name, p))
    for name, b in _dict_of(mod, "_buffers").items():
        out.append(_value_item(name, b))
    return out


def _optimizer_children(opt):
    groups = object.__getattribute__(opt, "__dict__").get("param_groups") or []
    out = []
    for i, g in enumerate(groups):
        if not isinstance(g, dict):
            continue
        hyper = ", ".join("%s=%s" % (k, _num(v) if isinstance(v, float) else v)
                          for k, v in g.items() if k != "params" and isinstance(v, (int, float, bool, type(None))))
        out.append(_leaf("param_groups[%d]" % i, "%d params, %s" % (len(g.get("params", ())), hyper)))
    return out


def _kids(value, device_data):
    torch = _torch()
    if torch is None:
        return []
    if _is_instance(value, "Tensor", torch):
        return _tensor_children(value, torch, device_data)
    if _is_instance(value, "Module", torch):
        return _module_children(value)
    if _is_instance(value, "Optimizer", torch):
        return _optimizer_children(value)
    return []


def children(value, path, device_data=False):
    """[{"name", "type", "value", "expandable"}] of the value reached from ``value`` by ``path``.

    A container's or object's children come ``PAGE`` at a time: a path that ends with ``"@N"`` asks for
    those from the Nth on, and a last child named ``"@N"`` (not expandable, its value "K more") says that K
    more follow, the next page being ``path + ["@N"]``."""
    start = 0
    if path and path[-1].startswith("@") and path[-1][1:].isdigit():
        start, path = int(path[-1][1:]), path[:-1]
    for key in path:
        if _torch_expandable(value):
            nxt = [obj for name, obj, _ in _kids(value, False) if name == key and obj is not None]
            if not nxt:
                raise ValueError("no expandable child %r" % (key,))
            value = nxt[0]
        else:
            value = _containers.child(value, key)
    if _torch_expandable(value):
        return [item for _, _, item in _kids(value, device_data)[:CHILD_CAP]]
    out = [{"name": name, "type": _containers.type_name(obj), "value": line(obj),
            "expandable": expandable(obj)} for name, obj in _containers.entries(value, start, PAGE)]
    left = _containers.count(value) - start - len(out)
    if left > 0:
        out.append({"name": "@%d" % (start + len(out)), "type": "", "value": "%d more" % left, "expandable": False})
    return out
