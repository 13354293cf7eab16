"""What the agent and the front end agree on: the mailbox layout and the messages.

Imported by the agent (inside the debugged Python, 3.9-3.14) and by the
engine (``tuidbg.engine.pyagent``), so: standard library only, no syntax newer
than 3.9, no imports at all.

Mailbox
-------
One block of memory owned by the agent (a ctypes buffer). Its address travels
in the hello message and, at every stop, in the second argument register of the
stop function (``rsi`` on x86-64, ``x1`` on aarch64). Integers are
little-endian (both supported architectures are).

====== ======= ===========================================================
offset size    field
====== ======= ===========================================================
0      8       MAGIC
8      4       VERSION
12     4       total size of the block
16     8       stop_seq: the agent numbers its stops (written by the agent)
24     8       ack_seq: the stop the front end answered (written by gdb)
32     4       in_len: bytes of JSON in the in area (front end)
36     4       ctl_flags: CTL_RETURN_TO_PYTHON (front end)
40     8       ctl_token: the Python step that may go on (front end, at any
               stop; 0 cancels a step interrupted by a native stop)
48     4       out_len: bytes of JSON in the out area (agent)
52     12      reserved
64     OUT     out area: JSON describing the stop, from the agent
64+OUT IN      in area: JSON ``{"ops": [...]}`` from the front end
====== ======= ===========================================================

The front end reads the header and the start of the out area in one memory
read. While the process is stopped it writes the in area, then the header
fields from ``ack_seq`` to ``ctl_token`` (one write); the agent reads them after the stop function
returns.
"""

MAGIC = b"TUIDBGMB"
VERSION = 1

OFF_MAGIC = 0
OFF_VERSION = 8
OFF_SIZE = 12
OFF_STOP_SEQ = 16
OFF_ACK_SEQ = 24
OFF_IN_LEN = 32
OFF_CTL_FLAGS = 36
OFF_CTL_TOKEN = 40
OFF_OUT_LEN = 48  # the front end writes 24..48 in one go: ack_seq, in_len, ctl_flags, ctl_token
HEADER_SIZE = 64

OUT_OFFSET = HEADER_SIZE
OUT_SIZE = 256 * 1024
IN_OFFSET = OUT_OFFSET + OUT_SIZE
IN_SIZE = 256 * 1024
MAILBOX_SIZE = IN_OFFSET + IN_SIZE

# ctl_flags
CTL_RETURN_TO_PYTHON = 1

# First argument of the stop function.
STOP_EVENT = 1  # a stop the user sees (breakpoint, step, exception, ...)
STOP_REPLY = 2  # the answer to requests made while stopped (evaluation, breakpoints)

# Stop reasons (the "reason" of the out area's JSON).
R_BREAKPOINT = "breakpoint"
R_STEP = "step"
R_ENTRY = "entry"  # the first line of the __main__ module (the "entry" request: tuidbg run's stop at entry)
R_SET_TRACE = "set_trace"
R_EXCEPTION = "exception"  # a raised exception matching a filter
R_UNCAUGHT = "uncaught"  # an exception nobody caught (sys.excepthook / threading.excepthook)
R_FAILURE = "failure"  # a failing pytest test (--break-on-failure)
R_NATIVE_CALL = "native_call"  # "step into native": the C function about to be called
R_REPLY = "reply"

# The Python step the agent arms itself for the stop at entry (the front end's steps count from 1).
ENTRY_TOKEN = 1 << 48

# Resume modes.
M_CONTINUE = "continue"
M_OVER = "over"
M_INTO = "into"
M_OUT = "out"
M_NATIVE = "native"  # step into the first native function the line calls
M_NATIVE_ARMED = "native_armed"  # the front end set its native breakpoint: go on, keep the step

# The modes the arm function (a step armed from a native stop) takes, by index.
ARM_MODES = (M_OVER, M_INTO, M_OUT)

# Environment of a program started by ``tuidbg run``.
ENV_SOCKET = "TUIDBG_AGENT_SOCKET"
ENV_TOKEN = "TUIDBG_AGENT_TOKEN"
ENV_ORIG_PYTHONPATH = "TUIDBG_AGENT_ORIG_PYTHONPATH"  # absent: PYTHONPATH was not set
ENV_CHILDREN = "TUIDBG_AGENT_CHILDREN"  # "1": children keep the variables above and load the agent too

# What ``tuidbg.breakpoint()`` does without a debugger.
ENV_ON_BREAK = "TUIDBG_ON_BREAK"

AGENT_THREAD_NAME = "tuidbg-agent"  # the agent's control thread (the front end tells it apart by this name)
