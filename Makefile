# Set-up and entry points. `make demo` and `make test` work on a fresh machine: they create
# (or reuse) the virtual environment .venv/ with everything installed, no system ROS needed.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.kron_dynamics_installed

.PHONY: venv demo test check urdf bench docs clean

$(STAMP): requirements.txt setup.py setup.cfg package.xml kron_dynamics_interfaces/srv/*.srv \
		kron_dynamics_interfaces/CMakeLists.txt scripts/build_interfaces.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	VENV=$(abspath $(VENV)) scripts/build_interfaces.sh
	touch $@

venv: $(STAMP)

demo: venv
	$(VENV)/bin/kron-dynamics demo stacker

test: venv
	$(PY) -m pytest -q test

# the fast part of `make test`: no ROS node, rclpy context or child process, nothing over ~3 s
# (markers `ros` and `slow`, setup.cfg; test/conftest.py fails a test that needs one and lacks it);
# without ROS 2 installed, the test modules that import it are skipped (test_check_without_ros.py)
check: venv
	$(PY) -m pytest -q -m "not ros and not slow" test

urdf: venv
	$(PY) -m kron_dynamics.model.machines urdf

# Benchmarks (not tests; long, the soak alone takes SOAK_SECONDS): every bench script, each writing its JSON to
# bench/results/ (stamped with revision and machine) and re-rendering docs/performance.md,
# docs/reliability.md and the README's headline block from all of them (bench/report.py).
# Pinocchio, PyBullet and example-robot-data come with requirements.txt, MuJoCo with bench/requirements.txt.
SOAK_SECONDS ?= 600
bench: venv
	$(PY) -m pip install -q -r bench/requirements.txt
	$(PY) bench/bench_dynamics.py
	$(PY) bench/bench_kinematics.py
	$(PY) bench/bench_one_model.py
	$(PY) bench/bench_derivatives.py
	$(PY) bench/bench_identification.py
	$(PY) bench/bench_gpu.py
	$(PY) bench/bench_symbolic.py
	$(PY) bench/bench_loading.py
	$(PY) bench/startup.py
	$(PY) bench/ros_latency.py
	$(PY) bench/ros_latency.py --thread-priority 0 \
		--out bench/results/ros_latency_normal_scheduling.json
	$(PY) bench/ros_latency.py --duration 30 --background-load 2 \
		--out bench/results/ros_latency_loaded.json
	$(PY) bench/ros_latency.py --duration 30 --background-load 2 --middleware-priority 39 \
		--out bench/results/ros_latency_loaded_middleware_priority.json
	# expected to miss the p99 target (normal scheduling on a busy machine): not an error here
	-$(PY) bench/ros_latency.py --duration 30 --background-load 2 --thread-priority 0 \
		--out bench/results/ros_latency_loaded_normal_scheduling.json
	$(PY) bench/soak.py --duration $(SOAK_SECONDS)
	$(PY) bench/faults.py --plot bench/results/faults.png
	$(PY) bench/report.py

# Re-render the generated tables of docs/ and README.md from bench/results (measures nothing)
docs: venv
	$(PY) bench/report.py

clean:
	rm -rf $(VENV) build install log .pytest_cache
