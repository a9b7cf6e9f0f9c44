"""ADL: an architecture definition language for neural machine translation.

    import adl
    program = adl.check("pos -> repeat(6, res_nd(mh_dot_self_att) -> res_nd(ffl)) -> norm",
                        role="encoder")
    program.network.params       # 18,914,304 at d_model=512
"""
from .api import check, hyper, load, parse, parse_value
from .build import ModelSpec, build, build_from_spec, check_model
from .check.program import CheckedChain, Network, Node, Program
from .errors import ADLError, Diagnostic
from .registry import REGISTRY, Hyper
from .syntax.printer import signature, to_text

__all__ = ["ADLError", "CheckedChain", "Diagnostic", "Hyper", "ModelSpec", "Network", "Node",
           "Program", "REGISTRY", "build", "build_from_spec", "check", "check_model", "hyper",
           "load", "parse", "parse_value", "signature", "to_text"]
