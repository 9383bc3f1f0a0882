# `make book` builds the book; `make test` runs every test. Both set up .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
VENDOR := book/vendor
PIP    := $(BIN)/pip install --disable-pip-version-check -q

# MathJax is served from the built book, so that it renders with no network. It comes from a PyPI wheel
# (django-static-mathjax, MathJax 3.2.2's es5 tree, listed in requirements.txt): no npm is needed.
MATHJAX_ES5 = $(BIN)/python -c "import mathjax, pathlib; print(pathlib.Path(mathjax.__file__).parent / 'static' / 'mathjax' / 'es5')"

.PHONY: help install assets browser book test test-lib test-notebooks test-book test-course student book-student clean

help:
	@echo "make book   build the book into _build/html/index.html"
	@echo "make test   run the library tests, nbval over every chapter, the strict build and the browser check"
	@echo "make student        regenerate the student edition (student/NN_name.ipynb) from the chapters"
	@echo "make book-student   build the student site (no solutions) into _build/student/html"

install: $(STAMP)

# TORCH_INDEX=https://download.pytorch.org/whl/cpu adds PyTorch's CPU index to PyPI for this install, so that torch
# comes as its CPU-only wheel rather than PyPI's CUDA build (several GB on Linux). Empty by default: the install
# reads only the package registries pip is configured with (CI sets PIP_EXTRA_INDEX_URL to the same effect).
# PYTHON picks the interpreter that creates .venv: 3.10 to 3.13 are covered (results/python-matrix).
TORCH_INDEX ?=

# Reinstall only when the requirements or the package metadata change.
$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) -r requirements.txt
	$(PIP) --no-deps -e .
	touch $@

assets: $(VENDOR)/.complete

# Copied into a temporary folder and moved into place at the end, so an interrupted copy leaves nothing half-done.
# Only the MathJax components _config.yml loads (mathjax3_config): the loader, the core, TeX input with its
# extensions (loaded on demand), CommonHTML output with its font data and fonts, the assistive MathML, and the
# lazy typesetting of formulas as they come near the window.
MATHJAX_PARTS = startup.js core.js input/tex.js input/tex/extensions output/chtml.js output/chtml/fonts/tex.js \
  output/chtml/fonts/woff-v2 a11y/assistive-mml.js ui/lazy.js
$(VENDOR)/.complete: $(STAMP) Makefile
	rm -rf $(VENDOR).tmp && mkdir -p $(VENDOR).tmp/mathjax
	src="$$($(MATHJAX_ES5))" && for part in $(MATHJAX_PARTS); do \
	  mkdir -p "$(VENDOR).tmp/mathjax/$$(dirname $$part)" && cp -R "$$src/$$part" "$(VENDOR).tmp/mathjax/$$part" || exit 1; \
	done
	touch $(VENDOR).tmp/.complete
	rm -rf $(VENDOR) && mv $(VENDOR).tmp $(VENDOR)

# A browser for the built-book check: $$CHROMIUM, else a system Chromium or Chrome, else Playwright's own Chromium,
# downloaded on first use only when neither of the others exists.
browser: $(STAMP)
	$(BIN)/python -m tests.book.browser --install

# The execution cache is keyed on each notebook's code, not on what that code reads: the data, the library (whose
# viewers write their HTML into the outputs) and the committed results. When any of them differs from the last
# build's, the cached outputs are thrown away so that every chapter runs again on what is there now.
DATA_STAMP := _build/.data-fingerprint
INPUTS_HASH = find src/attnconv results -type f ! -name '*.pyc' -print0 | LC_ALL=C sort -z | xargs -0 cat | \
  $(BIN)/python -c "import hashlib, sys; print('library and results', hashlib.sha256(sys.stdin.buffer.read()).hexdigest())"

# Jupyter Book executes one page at a time; book/ext/preexecute.py first executes the pages missing from its cache
# BOOK_JOBS at a time (default: every core), so that the build finds them all there.
# (nproc itself answers OMP_NUM_THREADS when it is set, as under `make test`: the cores are counted without it.)
BOOK_JOBS ?= $(shell env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 2)
book: $(STAMP) $(VENDOR)/.complete
	$(STAGE_START)
	@{ $(BIN)/python -m attnconv.data.fetch --fingerprint && $(INPUTS_HASH); } > $(DATA_STAMP).new
	@# Both the execution cache and Sphinx's own record of what it has read must go (--all): without --all, an
	@# unchanged chapter is not read again, so it is not executed again either. The stamp moves into place only
	@# after a build that succeeded, so a failed build re-executes everything next time too.
	@# FRESH=1 (as `make test` sets it) executes every chapter whatever the cache holds.
	@if [ -z "$(FRESH)" ] && cmp -s $(DATA_STAMP).new $(DATA_STAMP); then all=""; else all="--all"; \
	  rm -rf _build/.jupyter_cache; \
	  echo "$(if $(FRESH),FRESH=1,data, library or results changed since the last build): re-executing every chapter"; fi; \
	  $(BIN)/python book/ext/preexecute.py --jobs $(BOOK_JOBS) && \
	  echo "$(BIN)/jupyter-book build -W -n --keep-going $$all ." && \
	  $(BIN)/jupyter-book build -W -n --keep-going $$all . && mv $(DATA_STAMP).new $(DATA_STAMP)
	$(STAGE_END)

# The four stages, two at a time (TEST_JOBS=1: one after another), each one's output printed whole when it ends.
# The course's tests and nbval start first: the grader's tests spend much of their time waiting on kernels and time
# limits, which nbval's two workers fill. The book build (its pages executed two at a time) follows when the
# first of them ends, and the library tests, which keep two workers busy to the end, when the second does. MathJax
# and the browser are made ready before, so that make starts the stages in this order whatever is already built.
# The sub-make takes the environment as it is (-o $(STAMP)): this make has just brought it up to date.
# The claims ledger runs once per `make test`: the book's ledger page and tests/test_claims.py share it through a
# folder of this run's own (ATTNCONV_LEDGER_CACHE, see attnconv.claims.ledger), whichever of them gets there first.
TEST_JOBS ?= 2
# Each stage's wall time, one line at its end ("== stage NAME: N s"), which .ci/run gathers into a table.
STAGE_START = @mkdir -p _build && date +%s > _build/.stage-$@
STAGE_END = @echo "== stage $@: $$(( $$(date +%s) - $$(cat _build/.stage-$@) )) s"
# Every process of the run computes with one thread (OMP_NUM_THREADS=1, which PyTorch's default follows): two
# stages run at once, each with two workers, and each of those starts kernels and commands of its own, so the
# cores are always full of processes; a second thread per process only adds the threads' waits and hand-overs
# (on two cores: 1,590 CPU seconds for the whole run with PyTorch's default of a thread per core, 1,445 with one).
test: export OMP_NUM_THREADS = 1
test: export MKL_NUM_THREADS = 1
test: $(STAMP)
	@$(MAKE) --no-print-directory -o $(STAMP) assets browser
	@ledger="$$(mktemp -d)" && trap 'rm -rf "$$ledger"' EXIT && ATTNCONV_LEDGER_CACHE="$$ledger" \
	  $(MAKE) --no-print-directory -j$(TEST_JOBS) -Otarget -o $(STAMP) test-course test-notebooks test-book test-lib

# pytest-xdist: XDIST="-n 2" runs two workers (the default: a 2-core machine's both cores); XDIST= runs serially.
# Under `make test` two stages run at once, so their workers share the cores (tests/conftest.py sizes torch's threads
# per worker; the stages' waits on kernels, time limits and the browser are what the second stage fills).
XDIST ?= -n 2
# Each stage names its ten slowest tests, so that the time of `make test` can be read where it goes.
DURATIONS ?= --durations=10 --durations-min=5

# The library tests include the explorables' checks in Chromium (tests/explorables), hence the browser.
test-lib: $(STAMP) browser
	$(STAGE_START)
	$(BIN)/python -m pytest tests --ignore=tests/book --ignore=tests/course -q $(XDIST) $(DURATIONS)
	$(STAGE_END)

# Each chapter runs three times in `make test`, once per configuration a reader meets: with the data in test-book's
# build (FRESH=1: a clean kernel per chapter; with -W a cell that raises fails the build); as a reader without any
# data sees it (no $$ATTNCONV_DATA, an empty cache: the stand-in branches and the committed-results fallbacks); and
# in Colab (tests/colab, in test-lib: the installed wheel, a folder outside the repository, mirror downloads). The
# run without data is the course's grading of the worked editions (test-course: a cell that raises fails it, as
# here) for every chapter but 07, which the course grades with its corpora; so nbval runs only 07 without data.
# NBVAL_DATA=1 adds nbval's own run of every chapter with the data.
# Part V's appendix (07a) has no exercises, so the course never runs it, and it reads the corpora: nbval runs it
# without them. Part IV's appendix (06a) and chapter 08 read no data set, only the committed records: the Colab-like
# run (tests/colab/test_run_all.py: no $$ATTNCONV_DATA, an empty cache, and it checks that they download nothing)
# is their run without data, so nbval does not repeat it.
NODATA_CHAPTERS ?= notebooks/07_bert_convolutional_attention.ipynb notebooks/07a_appendix_language_runs.ipynb
test-notebooks: $(STAMP)
	$(STAGE_START)
	$(if $(NBVAL_DATA),$(BIN)/python -m pytest --nbval-lax --nbval-current-env notebooks -q \
	  $(if $(XDIST),$(XDIST) --dist loadfile))
	nodata="$$(mktemp -d)" && trap 'rm -rf "$$nodata"' EXIT && env -u ATTNCONV_DATA ATTNCONV_CACHE="$$nodata" \
	  $(BIN)/python -m pytest --nbval-lax --nbval-current-env $(NODATA_CHAPTERS) -q -p no:cacheprovider $(DURATIONS)
	$(STAGE_END)

# The build executes every chapter again (FRESH=1), whatever its cache holds: it is the run of the chapters with data.
test-book: FRESH = 1
test-book: book browser
	$(STAGE_START)
	$(BIN)/python -m pytest tests/book -q $(DURATIONS)
	$(STAGE_END)

# The worked edition of every chapter, executed in the grader's sandbox and graded to full marks (all but chapter 07
# without the data sets, as the autograder grades them: this is the run of those chapters without data), and
# the untouched student editions of chapters 01 and 05 graded to zero. loadgroup: the cheats, which share one
# grading of their baseline, run on one worker (tests/conftest.py hands out the longest tests first).
test-course: $(STAMP)
	$(STAGE_START)
	$(BIN)/python -m pytest tests/course -q $(if $(XDIST),$(XDIST) --dist loadgroup) $(DURATIONS)
	$(STAGE_END)

student: $(STAMP)
	$(BIN)/python -m attnconv.course.student --out student

book-student: $(STAMP) $(VENDOR)/.complete
	$(BIN)/python -m attnconv.course.student --out student --book _build/student/src
	$(BIN)/jupyter-book build -W -n --keep-going _build/student/src --path-output _build/student

clean:
	rm -rf _build
