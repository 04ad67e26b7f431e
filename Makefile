# Two commands: `make run` (set up + demo) and `make test` (set up + every test tier).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# pip prints errors only (-qq), so that its notices (index locations, upgrades, PATH) do not
# bury the demo's output.
PIP    := $(PY) -m pip -qq --disable-pip-version-check

.PHONY: run test setup lint clean bench

$(STAMP): pyproject.toml
	@echo "make: installing ceql and its dependencies into $(VENV) (the first time takes a few minutes)"
	@$(PYTHON) -m venv $(VENV)
	@$(PIP) install --upgrade pip
	@$(PIP) install -e '.[test]'
	@touch $(STAMP)

setup: $(STAMP)

# The demo: the shim jar (built when out of date), then the paper's queries on local Spark.
run: setup jar
	@$(PY) examples/demo.py

lint: setup
	$(VENV)/bin/ruff check python tests bench examples docs
	$(VENV)/bin/mypy

# The tiers in three pytest processes side by side, each printing its report, with its
# slowest tests, when it ends: the pure-Python tests, the Spark tests (tests/spark: one shared
# local session) and the end-to-end tier (tests/e2e: CLIs, spark-submit, clusters, Connect
# servers, streams — mostly JVMs starting and waiting). Two processes took ~58 min on CI's 2
# cores: the Spark tests wait on their JVM as much as they compute.
PYTEST := HYPOTHESIS_PROFILE=ci $(PY) -m pytest -q --durations=15
.PHONY: test-units test-spark test-e2e
test: setup lint jar spark-lines
	@$(MAKE) --no-print-directory -j3 --output-sync=target test-units test-spark test-e2e

test-units: setup jar
	$(PYTEST) --ignore=tests/e2e --ignore=tests/spark

test-spark: setup jar
	$(PYTEST) tests/spark

test-e2e: setup jar spark-lines
	$(PYTEST) tests/e2e

# The Spark lines ceql supports (the spark extra's range): a venv for each under
# $(VENV)/spark-lines/ with that pyspark and ceql's other dependencies but not ceql; the tests
# pip-install the wheel there (tests/e2e/test_spark_lines.py, test_wheel.py). The newest is
# the test extra's (.venv's); the first install of another downloads ~400 MB.
SPARK_LINES := 4.2.1 4.3.0
SPARK_REQUIREMENTS := import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; \
  print("\n".join(p["dependencies"] + p["optional-dependencies"]["spark"]))
.PHONY: spark-lines
spark-lines: $(SPARK_LINES:%=$(VENV)/spark-lines/%/.installed)

$(VENV)/spark-lines/%/.installed: pyproject.toml $(STAMP)
	@echo "make: installing pyspark $* and ceql's dependencies into $(VENV)/spark-lines/$*"
	@$(PYTHON) -m venv --without-pip $(VENV)/spark-lines/$*
	@$(PY) -c '$(SPARK_REQUIREMENTS)' > $(VENV)/spark-lines/$*/requirements.txt
	@$(PIP) --python $(VENV)/spark-lines/$*/bin/python install --no-compile "pyspark==$*" \
	  -r $(VENV)/spark-lines/$*/requirements.txt
	@touch $@

# Long random property runs hunting new failures (not part of `make test`); failing examples
# are saved in .hypothesis/ and replayed first by later runs of the default (dev) profile.
.PHONY: explore
explore: setup
	HYPOTHESIS_PROFILE=explore $(PY) -m pytest -q tests/test_properties.py tests/test_relevance.py

# The JVM shim (python/ceql/jars/ceql-shim.jar) with pyspark's Scala compiler; skipped when
# no Scala source changed since the last build.
.PHONY: jar
jar: setup
	@$(PY) -m ceql.shim.jar > /dev/null

clean:
	rm -rf $(VENV) build dist python/*.egg-info

# dist/ceql-*.whl with the grammar and the shim jar inside (`pip install dist/*.whl` needs no repo).
.PHONY: wheel
wheel: setup jar
	rm -rf build dist
	$(PIP) wheel --no-deps --wheel-dir dist .
	@for f in ceql/frontends/ceql/grammar/ceql.lark ceql/jars/ceql-shim.jar \
	         ceql/spark/log4j2.properties; do \
	  $(PY) -m zipfile -l dist/ceql-*.whl | grep "^$$f " > /dev/null \
	    || { echo "make wheel: $$f is missing from the wheel" >&2; exit 1; }; \
	done
	@ls dist/*.whl

# Benchmarks (not tests): ceql vs CORE C++ on the anchor workloads, scaling to 20 M events,
# MATCH_CEQL vs Spark self-joins, and the plot; results in bench/out, summary in bench/RESULTS.md.
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP)
	$(PIP) install -e '.[test,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP) jar
	$(PY) bench/engine.py --repeat 3
	$(PY) bench/scaling.py
	$(PY) bench/spark.py --timeout 300
	$(PY) bench/snapshot.py
	$(PY) bench/plot.py
