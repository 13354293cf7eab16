"""scripts/gpu-check.sh's driver: tuidbg's engine on a real cuda-gdb, scene by scene, every MI exchange
written to a transcript that later test runs replay.

- ``record``: the transport that runs cuda-gdb and writes what goes each way (``RecordingTransport``).
- ``replay``: the transport that plays such a transcript back to the engine, strictly
  (``ObservedReplay``), for ``tests/engine/test_cuda13_observed.py`` and the dry run's own check.
- ``scene``: what a scene is given (``SceneRun``: its session, its programs, its marks and notes),
  recording on a machine or replaying in a test.
- ``scenes``: the scenes themselves (one cuda-gdb each), the same code for recording and replaying.
- ``driver``: ``python -m gpucheck``: every scene in a process of its own, each with a timeout, all
  within one time budget, then the summary.

It is test tooling, not part of tuidbg: it imports tuidbg's engine and nothing imports it but the
tests. It runs on the CPython 3.12 of a GPU machine with only the wheels scripts/gpu-check.sh
carries (tuidbg's own dependencies), and here on the test machine's Pythons.
"""
