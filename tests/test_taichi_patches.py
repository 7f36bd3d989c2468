"""taichiflow.taichi_patches: the cheaper source excerpts of Taichi's front end still point a
compile error at its file, line and source."""
import pytest
import taichi as ti

from taichiflow import taichi_patches  # noqa: F401  (applies the patches)


def test_a_compile_error_names_the_file_line_and_source_of_the_fault():
    ti.init(arch=ti.cpu)

    @ti.kernel
    def broken() -> ti.i32:
        return name_nobody_defined + 1  # noqa: F821

    with pytest.raises(ti.TaichiCompilationError) as failure:
        broken()
    source = open(__file__).read().splitlines()
    line = 1 + next(k for k, text in enumerate(source) if "return name_nobody_defined" in text)
    message = str(failure.value)
    assert f'File "{__file__}", line {line}, in broken:' in message
    assert "return name_nobody_defined + 1" in message
    assert "^" not in message  # the caret line (the costly part) is gone
