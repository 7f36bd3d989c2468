set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
export PYTHONUNBUFFERED=1
timeout 140 python3 tools/amr-sedov.py --arch cuda --precision f32 --finest 256 --root 32 --block 8 --capacity 24576 2>&1 | grep -v Warning | tail -4
timeout 300 python3 tools/amr-run.py cases/cloud_blast_amr.toml --arch cuda --precision f32 --planes $OUT/cloud 2>&1 | grep -v '^\[Taichi\]' | tail -25
timeout 140 python3 tools/amr-run.py cases/bubble_collapse_amr.toml --arch cuda --precision f32 --planes $OUT/bubble --plane-z 0.0005 2>&1 | grep -v '^\[Taichi\]' | tail -25
tar -C $OUT -czf $OUT/planes.tgz cloud bubble && rm -rf $OUT/cloud $OUT/bubble
