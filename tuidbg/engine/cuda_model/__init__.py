"""The CUDA data model (being split into submodules; for now all of it is in ``ranges``)."""

from tuidbg.engine.cuda_model.ranges import *  # noqa: F401,F403
