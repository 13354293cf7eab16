"""gdb pretty-printer for ``at::Tensor`` / ``at::TensorBase`` (inside gdb's Python).

Shows a tensor as ``Tensor float32 [4, 8] cpu`` (with ``strides=`` and ``offset=``
when the tensor is not contiguous or does not start at its storage's beginning),
read from ``c10::TensorImpl`` through the debug info of the code being debugged
(a C++ extension built with ``-g``: libtorch itself has no DWARF). Memory reads
only: no inferior calls, so it is safe at any stop and never touches the data.

Layout read (torch 2.x): ``TensorBase::impl_`` is an ``intrusive_ptr`` whose
``target_`` is the ``TensorImpl*``; ``sizes_and_strides_`` (``SizesAndStrides``)
keeps up to 5 dims inline (sizes, then strides at slot 5), more out of line;
``storage_offset_``; ``data_type_`` is a ``caffe2::TypeMeta`` whose index is the
``c10::ScalarType`` for the built-in dtypes; ``device_opt_`` is a
``std::optional<c10::Device>`` whose payload sits at its start.

gcc leaves out the definition of a class with a vtable (TensorImpl) from a unit
that does not emit its vtable, so an extension built with plain ``-g -O0`` sees
TensorImpl as incomplete (``-femit-class-debug-always`` keeps it). Then the
fields are read at the offsets of torch 2.13 on x86_64 (``_RAW``), taken from the
full debug info of a ``-femit-class-debug-always`` build (both paths printed the
same lines by hand; tests/engine/test_torch_custom_op.py's plain ``-g`` build runs
this fallback). Another torch whose TensorImpl moved would read wrong here.
"""

import re

import gdb

_INLINE = 5  # c10::impl::SizesAndStrides' MAX_INLINE_SIZE
_DTYPES = ["uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
           "complex32", "complex64", "complex128", "bool", "qint8", "quint8", "qint32",
           "bfloat16"]
_DEVICES = ["cpu", "cuda", "mkldnn", "opengl", "opencl", "ideep", "hip", "fpga", "maia",
            "xla", "vulkan", "metal", "xpu", "mps", "meta", "hpu", "ve", "lazy", "ipu",
            "mtia", "privateuseone"]
# TensorImpl offsets when its type is incomplete (torch 2.13, x86_64, 176-byte TensorImpl).
_RAW = {"sizes_and_strides_": 56, "storage_offset_": 144, "data_type_": 160, "device_opt_": 162}
_TENSOR_RE = re.compile(r"^at::(Tensor|TensorBase)$")


def _field(value, name):
    """A member of ``value`` by name, looking into base classes too."""
    try:
        return value[name]
    except gdb.error:
        pass
    for f in value.type.strip_typedefs().fields():
        if f.is_base_class:
            try:
                return _field(value[f], name)
            except gdb.error:
                continue
    raise gdb.error("no member " + name)


def tensor_impl(value):
    """The ``TensorImpl`` (a gdb.Value, dereferenced) of an at::Tensor, or None if undefined."""
    ptr = _field(_field(value, "impl_"), "target_")
    if int(ptr) == 0:
        return None
    return ptr.dereference()


def _sizes_strides(impl):
    sas = impl["sizes_and_strides_"]
    ndim = int(sas["size_"])
    if ndim <= _INLINE:
        store = sas["inlineStorage_"]
        sizes = [int(store[i]) for i in range(ndim)]
        strides = [int(store[_INLINE + i]) for i in range(ndim)]
    else:
        store = sas["outOfLineStorage_"]
        sizes = [int(store[i]) for i in range(ndim)]
        strides = [int(store[ndim + i]) for i in range(ndim)]
    return sizes, strides


def _dtype(impl):
    index = int(impl["data_type_"]["index_"])
    return _DTYPES[index] if 0 <= index < len(_DTYPES) else "dtype#%d" % index


def _device(impl):
    opt = impl["device_opt_"]
    try:
        dev_t = gdb.lookup_type("c10::Device")
    except gdb.error:
        return "?"
    dev = opt.address.cast(dev_t.pointer()).dereference()
    # The engaged flag follows the 2-byte payload.
    engaged = int(opt.address.cast(gdb.lookup_type("unsigned char").pointer())[dev_t.sizeof])
    if not engaged:
        return "nodevice"
    kind = int(dev["type_"])
    index = int(dev["index_"])
    name = _DEVICES[kind] if 0 <= kind < len(_DEVICES) else "device#%d" % kind
    return name if index < 0 or name == "cpu" else "%s:%d" % (name, index)


def _contiguous_strides(sizes):
    out, acc = [], 1
    for s in reversed(sizes):
        out.append(acc)
        acc *= max(s, 1)
    return list(reversed(out))


def _raw_fields(addr):
    """(sizes, strides, dtype, device, offset) read at the ``_RAW`` offsets of a TensorImpl."""
    mem = bytes(gdb.selected_inferior().read_memory(addr, 176))
    base = _RAW["sizes_and_strides_"]
    ndim = int.from_bytes(mem[base:base + 8], "little")
    word = lambda buf, i: int.from_bytes(buf[8 * i:8 * i + 8], "little", signed=True)
    if ndim <= _INLINE:
        store = mem[base + 8:base + 8 + 8 * 2 * _INLINE]
        sizes = [word(store, i) for i in range(ndim)]
        strides = [word(store, _INLINE + i) for i in range(ndim)]
    else:
        ptr = int.from_bytes(mem[base + 8:base + 16], "little")
        store = bytes(gdb.selected_inferior().read_memory(ptr, 16 * ndim))
        sizes = [word(store, i) for i in range(ndim)]
        strides = [word(store, ndim + i) for i in range(ndim)]
    index = int.from_bytes(mem[_RAW["data_type_"]:_RAW["data_type_"] + 2], "little")
    dtype = _DTYPES[index] if 0 <= index < len(_DTYPES) else "dtype#%d" % index
    d = _RAW["device_opt_"]
    kind, dindex, engaged = mem[d], int.from_bytes(mem[d + 1:d + 2], "little", signed=True), mem[d + 2]
    if not engaged:
        device = "nodevice"
    else:
        device = _DEVICES[kind] if kind < len(_DEVICES) else "device#%d" % kind
        if dindex >= 0 and device != "cpu":
            device += ":%d" % dindex
    offset = int.from_bytes(mem[_RAW["storage_offset_"]:_RAW["storage_offset_"] + 8], "little", signed=True)
    return sizes, strides, dtype, device, offset


def _fields(impl):
    if impl.type.strip_typedefs().sizeof == 0 or not impl.type.strip_typedefs().fields():
        return _raw_fields(int(impl.address))
    sizes, strides = _sizes_strides(impl)
    return sizes, strides, _dtype(impl), _device(impl), int(impl["storage_offset_"])


def describe(value):
    """The one-line summary of an at::Tensor gdb.Value."""
    impl = tensor_impl(value)
    if impl is None:
        return "Tensor (undefined)"
    sizes, strides, dtype, device, offset = _fields(impl)
    text = "Tensor %s [%s] %s" % (dtype, ", ".join(str(s) for s in sizes), device)
    if strides != _contiguous_strides(sizes):
        text += " strides=[%s]" % ", ".join(str(s) for s in strides)
    if offset:
        text += " offset=%d" % offset
    return text


class TensorPrinter(object):
    def __init__(self, value):
        self.value = value

    def to_string(self):
        try:
            return describe(self.value)
        except (gdb.error, gdb.MemoryError) as exc:
            return "Tensor <unreadable: %s>" % exc


def lookup(value):
    t = value.type
    if t.code == gdb.TYPE_CODE_REF:
        t = t.target()
    t = t.unqualified().strip_typedefs()
    if t.code == gdb.TYPE_CODE_STRUCT and t.tag and _TENSOR_RE.match(t.tag):
        return TensorPrinter(value)
    return None


def register():
    if lookup not in gdb.pretty_printers:
        gdb.pretty_printers.append(lookup)
