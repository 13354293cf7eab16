"""The Python side of a stop: its values (``model``), the merge of Python and native frames
(``merge``) and the rules the panes render (``view``). Pure: no I/O, no session."""
