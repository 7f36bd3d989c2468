"""tools/count_flops.py reads the operations off LLVM IR along the costliest branch."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from count_flops import costliest_path, flop  # noqa: E402

DIAMOND = """
define void @serial(%struct.RuntimeContext* %context) {
entry:
  %a = fmul reassoc float %x, %y
  %b = fadd reassoc float %a, %y
  br i1 %c, label %cheap, label %dear
cheap:
  %d = fsub float %b, %x
  br label %join
dear:
  %e = fdiv float %b, %x
  %f = fmul <4 x float> %v, %w
  %g = tail call float @llvm.fma.f32(float %a, float %b, float %e)
  %h = tail call float @llvm.sqrt.f32(float %g)
  br label %join
join:
  %i = fadd float %h, %d
  ret void
}
"""


def test_the_costliest_branch_is_counted_with_vector_lanes_and_fused_multiply_adds():
    ops = costliest_path(DIAMOND)
    # entry (mul, add) + dear (4-lane mul, fma, div, sqrt) + join (add)
    assert (ops["mul"], ops["add"], ops["fma"], ops["div"], ops["sqrt"]) == (5, 2, 1, 1, 1)
    assert flop(ops) == 5 + 2 + 2
