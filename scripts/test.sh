#!/usr/bin/env bash
# Builds (installing dependencies if needed) and runs the tests: the lit +
# FileCheck suite, the runtime's unit tests and the Python tests (in parallel
# with pytest-xdist). Ends with one summary line.
#   scripts/test.sh         the inner loop: leaves out the Python tests marked
#                           slow (end-to-end and property runs, python/tests/conftest.py)
#   scripts/test.sh --all   every test, as CI (CI=true) runs them
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
all=0
[ "${1:-}" = --all ] && all=1
[ "${CI:-}" = true ] && all=1

scripts/setup.sh || { echo "build: 0 passed, 1 failed"; exit 1; }

status=0
lit_log=$(mktemp)
/usr/lib/llvm-22/bin/lit -sv "$BUILD_DIR/test" 2>&1 | tee "$lit_log"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
passed=$(sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p' "$lit_log" | tail -1)
failed=$(sed -n 's/^ *Failed *: *\([0-9]*\).*/\1/p' "$lit_log" | tail -1)
passed=${passed:-0}; failed=${failed:-0}

if [ -f "$BUILD_DIR/CTestTestfile.cmake" ]; then
  ctest_log=$(mktemp)
  ctest --test-dir "$BUILD_DIR" --output-on-failure 2>&1 | tee "$ctest_log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  total=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\2/p' "$ctest_log" | tail -1)
  cfailed=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of.*/\1/p' "$ctest_log" | tail -1)
  if [ -n "${total:-}" ]; then
    passed=$((passed + total - cfailed)); failed=$((failed + cfailed))
  fi
fi

if python3 -c "import pytest" 2>/dev/null; then
  py_log=$(mktemp)
  py_args=(-q python/tests)
  python3 -c "import xdist" 2>/dev/null && py_args+=(-n auto --dist loadfile)
  [ "$all" = 1 ] || py_args+=(-m "not slow")
  OFFLOAD_OPT="$PWD/$BUILD_DIR/bin/offload-opt" python3 -m pytest "${py_args[@]}" 2>&1 | tee "$py_log"
  rc=${PIPESTATUS[0]}
  # 5 = no tests collected, which is not a failure of the code.
  [ "$rc" = 0 ] || [ "$rc" = 5 ] || status=1
  p=$(grep -Eo '[0-9]+ passed' "$py_log" | tail -1 | grep -Eo '[0-9]+')
  f=$(grep -Eo '[0-9]+ (failed|error)' "$py_log" | awk '{s+=$1} END {print s+0}')
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
fi

[ "$passed" -gt 0 ] || status=1
[ "$all" = 1 ] || echo "(the Python tests marked slow were left out: scripts/test.sh --all runs every test, as CI does)"
echo "tests: $passed passed, $failed failed"
exit $status
