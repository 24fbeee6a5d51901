#!/usr/bin/env bash
# The declared lower bounds are true: install every dependency (core, the dev extra and the fast extra) at the floor pinned in
# .ci/constraints-floors.txt into a separate virtual environment and run the test suite there.
# The fast tier (pytest's default) less the suites that execute the docs (README, notebook, examples), the
# campaign store's crash and durability tests (they kill processes mid-write, flip bytes), the command lines'
# own tests, the input fuzzing, and the packaging and import-structure checks: those exercise the docs'
# text, argparse, the standard library (sqlite3, os) and the source tree, not the pinned
# dependencies' behaviour under the library, and the main run has them.  The long seeded Monte-Carlo
# checks are left to the main run too.
# `floors.sh install` only installs, `floors.sh test` only tests (.ci/run installs while the main environment is
# being built and checked); no argument does both.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${ACTIVERANK_FLOORS_VENV:-.venv-floors}
what=${1:-all}
if [ "$what" != test ]; then
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet -c .ci/constraints-floors.txt -e ".[dev,fast]"
# every pin really installed (a constraint on a package nothing requires would be silently unused)
"$venv/bin/python" - .ci/constraints-floors.txt <<'PY'
import importlib.metadata as md
import sys

bad = []
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if line:
        name, version = line.split("==")
        got = md.version(name)
        if got != version:
            bad.append(f"{name}: pinned {version}, installed {got}")
print("floors installed:", ", ".join(l.split("#")[0].strip() for l in open(sys.argv[1]) if l.split("#")[0].strip()))
sys.exit("\n".join(bad) if bad else 0)
PY
fi
[ "$what" = install ] && exit 0
"$venv/bin/python" -m pytest -q -p no:cacheprovider -n 2 --dist worksteal \
    --ignore=tests/test_readme.py --ignore=tests/test_notebook.py --ignore=tests/test_examples.py \
    --ignore=tests/test_cli.py --ignore=tests/test_cli_judges.py --ignore=tests/test_cli_paths.py \
    --ignore=tests/campaign/test_cli.py --ignore=tests/campaign/test_durability.py \
    --ignore=tests/test_fuzz.py --ignore=tests/test_packaging.py \
    --ignore=tests/test_architecture.py --ignore=tests/test_imports.py
