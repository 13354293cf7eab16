"""The engine: gdb (or cuda-gdb) driven over GDB/MI, as an asyncio library with typed state.

Nothing here imports Textual, Rich or ``tuidbg.ui`` (checked by the import-linter contracts in
pyproject.toml). See ARCHITECTURE.md for the layers inside.
"""
