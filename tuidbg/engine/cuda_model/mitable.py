"""Reading cuda-gdb's MI tables: the table in a reply, and one way to turn its rows into values.

A table's name is the single key of the ``^done`` payload
(``InfoCudaKernelsTable``, ``CoalescedInfoCudaThreadsTable``...); cells are read
by ``col_name``, never by header text (headers changed between 11.8 and 12.x)
or by position (13.x dropped the kernels ``parent`` column). Every cell is a
string.

A row type (``TableRow``) states, per field, the column it comes from and how
the cell is converted (``CELLS``, built with :func:`cells`); ``from_row`` is the
one constructor for all of them. The conversions below are the rules every
table follows:

- a missing column reads as ``None``, which each conversion turns into the
  field's empty value (``""``, ``0``, ``None``, ``False``);
- a field may name several columns (a column renamed between releases): the
  first one the row has is read, whatever its value;
- special coordinates (``invalid``, ``*``, ``current``, ``-``, empty) are
  ``None`` for numbers and dim3s, ``0`` for indices and masks.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, ClassVar, Mapping, Sequence, TypeVar, Union

from tuidbg.engine.cuda_model.coords import Dim3, _num
from tuidbg.engine.cuda_model.errors import CudaError
from tuidbg.engine.mi import as_list, to_int


@dataclass(frozen=True)
class MITable:
    """One MI table as cuda-gdb sends it: the name, the column names, the rows (dicts by col_name)."""

    name: str
    columns: tuple[str, ...]
    headers: tuple[str, ...]
    rows: Sequence[Mapping[str, Any]]

    @property
    def coalesced(self) -> bool:
        return self.name.startswith("Coalesced")

    @property
    def uncoalesced(self) -> bool:
        return self.name.startswith("Uncoalesced")

    def __len__(self) -> int:
        return len(self.rows)


def parse_table(payload: Mapping[str, Any], expect: str | None = None) -> MITable:
    """The table in a ``^done`` payload: its name is the payload's single key.

    ``expect`` (e.g. ``"InfoCudaKernelsTable"`` or ``"ThreadsTable"``) is matched
    against the end of the name, so Coalesced/Uncoalesced variants both pass.
    """
    keys = [k for k, v in payload.items() if isinstance(v, Mapping) and ("body" in v or "hdr" in v)]
    if len(keys) != 1:
        got = ", ".join(payload) or "nothing"
        raise CudaError(f"cuda-gdb did not answer with a table (got {got})")
    name = keys[0]
    if expect and not name.endswith(expect):
        raise CudaError(f"cuda-gdb answered with {name}, expected a {expect}")
    tbl = payload[name]
    hdr = [h for h in as_list(tbl.get("hdr")) if isinstance(h, Mapping)]
    body = [r for r in as_list(tbl.get("body")) if isinstance(r, Mapping)]
    return MITable(
        name=name,
        columns=tuple(str(h.get("col_name", "")) for h in hdr),
        headers=tuple(str(h.get("colhdr", "")) for h in hdr),
        rows=body,
    )


# ---------------------------------------------------------------------------------------------
# Cell conversions (each takes the cell, or None when the row has no such column)

Convert = Callable[[Any], Any]


def text(value: Any) -> str:
    """The cell as printed."""
    return "" if value is None else str(value)


def word(value: Any) -> str:
    """The cell without surrounding blanks (states, statuses)."""
    return "" if value is None else str(value).strip()


number: Convert = _num
"""A number (decimal or 0x hex); special coordinates give None."""


def index(value: Any) -> int:
    """A row's own index (device, SM, warp...): a number, 0 when special or missing."""
    return _num(value) or 0


def mask(value: Any) -> int:
    """A bit mask (``0xffffffff``), 0 when missing or malformed."""
    return to_int(value) or 0


def dim(value: Any) -> Dim3 | None:
    """A ``(x,y,z)`` cell; special or malformed gives None."""
    return Dim3.parse(value)


def dim_or_origin(value: Any) -> Dim3:
    """A ``(x,y,z)`` cell that a range needs: special or malformed gives (0,0,0)."""
    return Dim3.parse(value) or Dim3()


def star(value: Any) -> bool:
    """The ``current`` column: ``*`` marks the focused row."""
    return value is not None and str(value).strip() == "*"


# ---------------------------------------------------------------------------------------------
# Rows


@dataclass(frozen=True)
class Cell:
    """How one field is read: the first of ``columns`` the row has, through ``convert``."""

    columns: tuple[str, ...]
    convert: Convert

    def raw(self, row: Mapping[str, Any]) -> Any:
        """The cell as cuda-gdb sent it (None when the row has none of the columns)."""
        for c in self.columns:
            if c in row:
                return row[c]
        return None

    def read(self, row: Mapping[str, Any]) -> Any:
        """The field's value."""
        return self.convert(self.raw(row))


def fixed(value: Any) -> Cell:
    """A field that reads no column (one thread of an uncoalesced table counts 1)."""
    return Cell((), lambda _cell: value)


CellSpec = Union[Cell, Convert, "tuple[str | tuple[str, ...], Convert]"]


def cells(*bases: Mapping[str, Cell], **spec: CellSpec) -> Mapping[str, Cell]:
    """Field name → Cell, from ``bases`` then ``spec``.

    A spec is a conversion (the column has the field's name), a
    ``(column or columns, conversion)`` pair, or a Cell.
    """
    out: dict[str, Cell] = {}
    for base in bases:
        out.update(base)
    for name, s in spec.items():
        if isinstance(s, Cell):
            out[name] = s
        elif isinstance(s, tuple):
            cols, convert = s
            out[name] = Cell((cols,) if isinstance(cols, str) else tuple(cols), convert)
        else:
            out[name] = Cell((name,), s)
    return MappingProxyType(out)


R = TypeVar("R", bound="TableRow")


class TableRow:
    """A value made from one table row: subclasses (frozen dataclasses) set ``CELLS``.

    A table whose rows come in two shapes (coalesced ranges, uncoalesced single
    blocks or threads) overrides ``cells_for`` to pick the map by the columns
    the row has.
    """

    CELLS: ClassVar[Mapping[str, Cell]] = MappingProxyType({})

    @classmethod
    def cells_for(cls, row: Mapping[str, Any]) -> Mapping[str, Cell]:
        return cls.CELLS

    @classmethod
    def from_row(cls: type[R], row: Mapping[str, Any]) -> R:
        """The value of one row (a dict by ``col_name``)."""
        return cls(**{name: c.read(row) for name, c in cls.cells_for(row).items()})


def rows(payload: Mapping[str, Any], cls: type[R], expect: str | None = None) -> tuple[R, ...]:
    """Typed rows of the table in ``payload``."""
    return tuple(cls.from_row(r) for r in parse_table(payload, expect).rows)
