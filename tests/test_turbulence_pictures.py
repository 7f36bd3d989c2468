"""tools/turbulence-pictures.py on a small made-up pack: every gallery file is written, at the
size asked, the movie with a frame per slice, and the numbers it prints are the pack's."""
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
N, TIMES = 16, (0.0, 0.5, 1.0)


def make_pack(pack: Path):
    """rho = 1 + 0.5 sin(2 pi x), B = (1, 0.2 sin(2 pi z), 0) on 16^3; density slices whose range
    grows with t; spectra E(k) = (1 + t)^-1 k^-2; diagnostics of a run with and without cleaning."""
    pack.mkdir()
    c = (np.arange(N) + 0.5) / N
    x, y, z = np.meshgrid(c, c, c, indexing="ij")
    np.save(pack / "rho.npy", (1 + 0.5 * np.sin(2 * np.pi * x)).astype(np.float32))
    np.save(pack / "Bx.npy", np.ones_like(x, dtype=np.float32))
    np.save(pack / "By.npy", (0.2 * np.sin(2 * np.pi * z)).astype(np.float32))
    np.save(pack / "Bz.npy", np.zeros_like(x, dtype=np.float32))
    slices = np.array([1 + 0.4 * t * np.sin(2 * np.pi * x[:, :, 0]) for t in TIMES], dtype=np.float32)
    np.savez_compressed(pack / "slices.npz", times=np.array(TIMES), rho=slices)
    k = np.arange(N)
    with open(pack / "spectra.csv", "w") as f:
        f.write("k," + ",".join(f"t={t:g}" for t in (0.0, 0.1, 0.5, 1.0, 2.0)) + "\n")
        for kk in k:
            f.write(f"{kk}," + ",".join(f"{(0 if kk == 0 else kk ** -2.0 / (1 + t)):.6e}"
                                        for t in (0.0, 0.1, 0.5, 1.0, 2.0)) + "\n")
    for name, end in (("glm.csv", 2.0), ("noglm.csv", 0.05)):
        t = np.linspace(0.0, end, 50)
        rows = np.stack([t, 50 / (1 + 10 * t), 1 + t, 0.01 * (1 + t)], axis=1)
        np.savetxt(pack / name, rows, delimiter=",", comments="",
                   header="time,sum_kinetic_energy,sum_magnetic_energy,rms_div_B")


def test_the_tool_writes_every_gallery_file(tmp_path):
    pack, out = tmp_path / "pack", tmp_path / "gallery"
    make_pack(pack)
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "turbulence-pictures.py"), str(pack),
                           "--diagnostics", str(pack / "glm.csv"), str(pack / "noglm.csv"), "--out", str(out),
                           "--seeds", "20"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    for name in ("field_lines", "density_slice", "spectra", "energy"):
        with Image.open(out / f"mhd_turbulence_{name}.png") as im:
            assert im.size == (900, 700)
            assert len(np.unique(np.asarray(im.convert("RGB")).reshape(-1, 3), axis=0)) > 16
    with Image.open(out / "mhd_turbulence_density_slice.gif") as im:
        assert im.n_frames == len(TIMES)
    # 1 + 0.5 sin(2 pi x) at the cell centres peaks at 1 + 0.5 sin(2 pi 3.5 / 16) = 1.49
    assert "rho 0.51 to 1.49, |B| 1 to 1.02" in done.stdout              # the field lines' picture
    assert "rho 0.608 (t = 1) to 1.39 (t = 1)" in done.stdout            # the movie's one range
    assert "slope over 3 <= k <= 20: -2.00" in done.stdout
    assert "largest rms_div_B 0.03 at t = 2" in done.stdout
