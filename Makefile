# `make book` builds the book; `make test` runs every test. Both set up .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
VENDOR := book/vendor
PIP    := $(BIN)/pip install --disable-pip-version-check -q

# Web assets served from the built book, so that it renders with no network.
MATHJAX      := mathjax@3.2.2
REQUIREJS    := requirejs@2.3.7
HTML_MANAGER := @jupyter-widgets/html-manager@1.0.6

.PHONY: help install assets book test test-lib test-notebooks test-book test-course student book-student clean

help:
	@echo "make book   build the book into _build/html/index.html"
	@echo "make test   run the library tests, nbval over every chapter, the strict build and the browser check"
	@echo "make student        regenerate the student edition (student/NN_name.ipynb) from the chapters"
	@echo "make book-student   build the student site (no solutions) into _build/student/html"

install: $(STAMP)

# Reinstall only when the requirements or the package metadata change.
$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -r requirements.txt
	$(PIP) --no-deps -e .
	touch $@

assets: $(VENDOR)/.complete

# Fetched into a temporary folder and moved into place at the end, so an interrupted fetch leaves nothing half-done.
$(VENDOR)/.complete:
	rm -rf $(VENDOR).tmp && mkdir -p $(VENDOR).tmp/pkg
	cd $(VENDOR).tmp/pkg && npm pack --silent $(MATHJAX) $(REQUIREJS) $(HTML_MANAGER) >/dev/null
	cd $(VENDOR).tmp/pkg && for f in *.tgz; do mkdir "$${f%.tgz}" && tar -xzf "$$f" -C "$${f%.tgz}" --strip-components=1; done
	mv $(VENDOR).tmp/pkg/mathjax-*/es5 $(VENDOR).tmp/mathjax
	mv $(VENDOR).tmp/pkg/requirejs-*/require.js $(VENDOR).tmp/require.js
	mv $(VENDOR).tmp/pkg/jupyter-widgets-html-manager-*/dist $(VENDOR).tmp/html-manager
	find $(VENDOR).tmp/html-manager -name '*.map' -delete
	rm -rf $(VENDOR).tmp/pkg && touch $(VENDOR).tmp/.complete
	rm -rf $(VENDOR) && mv $(VENDOR).tmp $(VENDOR)

book: $(STAMP) $(VENDOR)/.complete
	$(BIN)/jupyter-book build -W -n --keep-going .

test: test-lib test-notebooks test-course test-book

test-lib: $(STAMP)
	$(BIN)/python -m pytest tests --ignore=tests/book --ignore=tests/course -q

test-notebooks: $(STAMP)
	$(BIN)/python -m pytest --nbval-lax --nbval-current-env notebooks -q

test-book: book
	$(BIN)/python -m pytest tests/book -q

# Both editions of every chapter, executed and graded: full marks for the worked one, zero for the student one.
test-course: $(STAMP)
	$(BIN)/python -m pytest tests/course -q

student: $(STAMP)
	$(BIN)/python -m attnconv.student --out student

book-student: $(STAMP) $(VENDOR)/.complete
	$(BIN)/python -m attnconv.student --out student --book _build/student/src
	$(BIN)/jupyter-book build -W -n --keep-going _build/student/src --path-output _build/student

clean:
	rm -rf _build
