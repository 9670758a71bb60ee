"""What import-linter does not see: cycles through imports inside functions (and through imports by name,
``importlib.import_module``), any import inside a function (outside ``AppConfig.ready``), ``ImportError``
fallbacks, and the maintainer's tour against the tree.

import-linter's contracts (pyproject.toml) forbid upward imports between and inside packages; these tests
check the claims docs/architecture.md and CONTRIBUTING.md make beyond them.
"""

from __future__ import annotations

import ast
import configparser
import importlib
import importlib.util
import re
import textwrap
import tomllib

import grimp
import pytest
from django.apps import apps
from django.conf import settings as django_settings

from lexboard.celery import app
from tests.project import DJANGO_PACKAGES, PACKAGES, ROOT, source_files

TESTS = ROOT / "tests"

#: An import inside a function (of the project, a pinned dependency or the standard library) is allowed only where
#: Django documents it: the ``ready`` method of an ``AppConfig`` subclass, which imports the app's signal receivers.
READY = "ready"

#: The one ``ImportError`` fallback: an optional compiled module of our own (a skipped build step, ``make native``),
#: never a pinned dependency (CONTRIBUTING.md, "Modules"): the file, and the one module its ``try`` may import.
OPTIONAL_BUILDS = {"evaluation/fastscore.py": "_fastscore"}
#: The exceptions of a missing module.
IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}

#: Modules that import a module by its name when a command runs (``importlib.import_module``, ``__import__``):
#: the command line's start-up loads only what the command needs (docs/performance.md). Nowhere else. These
#: imports are imports like any other: the cycle count below adds them to grimp's graph.
LAZY_LOADERS = {
    "evaluation/__init__.py": "PEP 562: the package's public names load their module when first used",
    "evaluation/cli.py": "each subcommand's handler module (numpy, scipy) loads when the subcommand runs",
    "evaluation/cli_tasks.py": "classify and aggregate load the classification code when they run",
    "evaluation/cli_score.py": "--verify loads pytrec_eval and the plain reader only when asked",
}

_IMPORT_BY_NAME = {"import_module", "__import__"}


def _called_name(node: ast.Call) -> str:
    """``f`` of ``f(...)`` or ``x.f(...)``; empty for anything else called."""
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _module_name(path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports_by_name(path) -> tuple[list[int], set[str]]:
    """The lines of ``path`` that import a module by name, and the project modules they may import: the literal
    argument, or, when the name is computed, every string of the module that names a project module (absolutely
    or inside the module's own package): counting one too many is safe, one too few would hide a cycle."""
    tree = ast.parse(path.read_text())
    lines, targets, computed = [], set(), False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called_name(node) in _IMPORT_BY_NAME and node.args:
            lines.append(node.lineno)
            if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                targets.add(node.args[0].value)
            else:
                computed = True
    if computed:
        module = _module_name(path)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                targets |= {node.value, f"{package}.{node.value}"}
    return lines, targets


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    graph = grimp.build_graph(*PACKAGES, include_external_packages=False)
    modules = graph.modules
    for path in source_files():
        for target in _imports_by_name(path)[1]:
            if target in modules:
                graph.add_import(importer=_module_name(path), imported=target)
    return graph


def _base_name(node: ast.expr) -> str:
    """``AppConfig`` of ``AppConfig`` or ``apps.AppConfig``."""
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _ready_methods(tree: ast.AST) -> set[ast.AST]:
    """The ``ready`` methods of the module's ``AppConfig`` subclasses: Django's documented place to import an app's
    signal receivers (the imports connect them; at module level they would run before the app registry is ready)."""
    return {item for cls in ast.walk(tree)
            if isinstance(cls, ast.ClassDef) and any(_base_name(base) == "AppConfig" for base in cls.bases)
            for item in cls.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == READY}


def _function_imports(tree: ast.AST) -> list[tuple[str, ast.Import | ast.ImportFrom, str]]:
    """(innermost function, statement, module) of every import inside a function, but those of ``AppConfig.ready``."""
    allowed = {id(node) for ready in _ready_methods(tree) for node in ast.walk(ready)}
    found: dict[int, tuple[str, ast.Import | ast.ImportFrom, str]] = {}
    for fn in ast.walk(tree):  # outer functions first: an inner function's walk overwrites with its own name
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(fn):
                if id(node) in allowed:
                    continue
                if isinstance(node, ast.ImportFrom):
                    found[id(node)] = (fn.name, node, ("." * node.level) + (node.module or ""))
                elif isinstance(node, ast.Import):
                    found[id(node)] = (fn.name, node, ", ".join(alias.name for alias in node.names))
    return list(found.values())


def _import_error_fallbacks(tree: ast.AST, rel: str) -> list[int]:
    """Lines of the module that handle a missing module: an ``except ImportError`` (or ``ModuleNotFoundError``, alone
    or in a tuple) or a ``suppress(ImportError)``, but the one whose ``try`` imports only ``OPTIONAL_BUILDS[rel]``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called_name(node) == "suppress" and any(
                isinstance(n, ast.Name) and n.id in IMPORT_ERRORS for arg in node.args for n in ast.walk(arg)):
            found.append(node.lineno)
        if not isinstance(node, ast.Try | ast.TryStar):
            continue
        for handler in node.handlers:
            names = {n.id for n in ast.walk(handler.type) if isinstance(n, ast.Name)} if handler.type else set()
            if not names & IMPORT_ERRORS:
                continue
            imported = {alias.name for stmt in node.body if isinstance(stmt, ast.ImportFrom | ast.Import)
                        for alias in stmt.names}
            only_imports = all(isinstance(stmt, ast.ImportFrom | ast.Import) for stmt in node.body)
            if not (only_imports and imported == {OPTIONAL_BUILDS.get(rel)}):
                found.append(handler.lineno)
    return found


def test_no_module_level_cycle_counting_imports_inside_functions(graph):
    """grimp reads every import, in a function or not: no two modules may reach each other."""
    cycles = []
    for package in PACKAGES:
        for module in sorted(graph.find_descendants(package) | {package}):
            for imported in graph.find_modules_directly_imported_by(module):
                if graph.chain_exists(importer=imported, imported=module):
                    chain = graph.find_shortest_chain(importer=imported, imported=module)
                    cycles.append(f"{module} -> {' -> '.join(chain or [])}")
    assert not cycles, "import cycles:\n" + "\n".join(sorted(cycles)[:20])


def test_the_cycle_count_sees_imports_by_name():
    """``importlib.import_module("evaluation.verify")`` in a function is an import the graph must hold."""
    graph = grimp.build_graph("evaluation", include_external_packages=False)
    assert not graph.direct_import_exists(importer="evaluation.cli_score", imported="evaluation.verify")
    lines, targets = _imports_by_name(ROOT / "evaluation" / "cli_score.py")
    assert lines and "evaluation.verify" in targets
    assert {"evaluation.cli_score", "evaluation.cli_stats"} <= _imports_by_name(ROOT / "evaluation" / "cli.py")[1]
    assert "evaluation.scoring" in _imports_by_name(ROOT / "evaluation" / "__init__.py")[1]


def test_no_import_inside_a_function():
    """Every import is at the top of its module, the project's, a pinned dependency's or the standard library's, in
    every package of the project (migrations included): the one exception is ``AppConfig.ready``, where Django has an
    app import its signal receivers. A module is imported by name (``importlib.import_module``) only by the command
    line's lazy loaders."""
    found = []
    for path in source_files(migrations=True):
        rel = path.relative_to(ROOT).as_posix()
        if rel not in LAZY_LOADERS:
            found += [f"{rel}:{line} (import by name)" for line in _imports_by_name(path)[0]]
        found += [f"{rel}:{node.lineno} ({function}: {name})"
                  for function, node, name in _function_imports(ast.parse(path.read_text()))]
    assert not found, "move these imports to the module's top (or the code to the right layer): " + ", ".join(found)
    idle = [rel for rel in LAZY_LOADERS if not _imports_by_name(ROOT / rel)[0]]
    assert not idle, "LAZY_LOADERS lists modules that import nothing by name: " + ", ".join(idle)


def test_no_import_error_fallback():
    """``except ImportError`` (or ModuleNotFoundError, or ``suppress`` of either) nowhere in the project's packages
    (migrations included) but around the import of the one optional build of our own, ``OPTIONAL_BUILDS``: the
    ``try`` of such a handler imports that module and nothing else. A pinned dependency is imported, or the process
    fails at start."""
    found = [f"{path.relative_to(ROOT).as_posix()}:{line}" for path in source_files(migrations=True)
             for line in _import_error_fallbacks(ast.parse(path.read_text()), path.relative_to(ROOT).as_posix())]
    assert not found, "an ImportError fallback for a pinned dependency: " + ", ".join(found)
    for rel, module in OPTIONAL_BUILDS.items():  # the exception is still there, or the list says what is not
        tries = [node for node in ast.walk(ast.parse((ROOT / rel).read_text())) if isinstance(node, ast.Try)
                 and any(alias.name == module for stmt in node.body if isinstance(stmt, ast.ImportFrom | ast.Import)
                         for alias in stmt.names)]
        assert tries, f"OPTIONAL_BUILDS lists {rel}, whose try no longer imports {module}"


def test_the_import_walks_find_what_they_look_for():
    """The two walks above, on made-up modules: each finds its case and passes the allowed one."""
    source = textwrap.dedent("""
        from django.apps import AppConfig, apps

        class Config(AppConfig):
            def ready(self):
                from . import receivers

        class Other(apps.AppConfig):
            async def ready(self):
                import signal

        class NotAnApp:
            def ready(self):
                import json

        def outer():
            import sys
            def inner():
                from os import path
    """)
    found = {(function, name) for function, _, name in _function_imports(ast.parse(source))}
    assert found == {("ready", "json"), ("outer", "sys"), ("inner", "os")}
    fallbacks = textwrap.dedent("""
        try:
            from . import _fastscore as _native
        except ImportError:
            _native = None
        try:
            import numpy
        except (ValueError, ModuleNotFoundError):
            numpy = None
        with contextlib.suppress(ImportError):
            import scipy
        try:
            from . import _fastscore
            import numpy
        except ImportError:
            pass
    """)
    assert sorted(_import_error_fallbacks(ast.parse(fallbacks), "evaluation/fastscore.py")) == [8, 10, 15]
    assert sorted(_import_error_fallbacks(ast.parse(fallbacks), "evaluation/other.py")) == [4, 8, 10, 15]


def test_the_tour_names_every_package_and_only_folders_that_exist():
    text = (ROOT / "docs" / "architecture.md").read_text()
    tour = text[text.index("## A maintainer's tour"):text.index("## Layers")]
    listed = set(re.findall(r"^\| `([a-z_]+)/` \|", tour, re.M))
    assert listed == set(PACKAGES), f"tour lists {sorted(listed)}, the project has {sorted(PACKAGES)}"
    for folder in listed:
        assert (ROOT / folder / "__init__.py").exists(), folder
    for path in re.findall(r"`((?:[a-z_]+/)+[a-z_]+\.py)`", tour):
        assert (ROOT / path).exists(), f"the tour names {path}, which does not exist"


def test_the_tour_gives_each_app_its_label():
    """The label column is the one Django uses, and each app's label is its package's name (#40)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    tour = text[text.index("## A maintainer's tour"):text.index("## Layers")]
    rows = dict(re.findall(r"^\| `([a-z_]+)/` \|.*\| `?([a-z_—]+)`? \|$", tour, re.M))
    labels = {config.name: config.label for config in apps.get_app_configs()}
    for package in DJANGO_PACKAGES:
        if package in labels:
            assert rows.get(package) == labels[package], (package, rows.get(package), labels[package])
            assert labels[package] == package, f"{package}/ is labelled {labels[package]!r}: a label is its package's name"


def test_templates_and_url_namespaces_match_the_app_that_renders_them():
    """A view in ``app/`` renders ``app/…`` templates (or the site's own, at the top of templates/)."""
    shared = {"base.html", "404.html", "500.html", "503.html"}
    render = re.compile(r"""(?:render|get_template|render_to_string)\(\s*(?:request,\s*)?["']([\w/.-]+\.html)["']""")
    wrong = []
    for package in DJANGO_PACKAGES:
        for path in source_files((package,)):
            for name in render.findall(path.read_text()):
                if name in shared or name.startswith(("account/", "admin/", "allauth/", "registration/")):
                    continue
                if name.split("/")[0] != package:
                    wrong.append(f"{path.relative_to(ROOT)}: {name}")
    assert not wrong, "templates outside their app's folder: " + ", ".join(wrong)
    for package in DJANGO_PACKAGES:
        urls = ROOT / package / "urls.py"
        if package == "lexboard":  # the project's root URLconf: no namespace
            continue
        if urls.exists():
            match = re.search(r'^app_name = "(\w+)"', urls.read_text(), re.M)
            assert match and match.group(1) == package, f"{package}/urls.py: app_name must be {package!r}"


def test_every_setting_the_code_reads_is_declared():
    """``settings.X`` and ``getattr(settings, "X", …)`` name a setting of lexboard/settings or Django: a default
    hidden in a getattr is a setting nobody can find (and a typo reads the default silently)."""
    read = set()
    for path in source_files(DJANGO_PACKAGES):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "settings" \
                    and node.attr.isupper():
                read.add((node.attr, path.relative_to(ROOT).as_posix()))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                    and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) and node.args[0].id == "settings":
                name = node.args[1]
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    read.add((name.value, path.relative_to(ROOT).as_posix()))
                    assert len(node.args) == 2, f"{path.relative_to(ROOT)}: declare {name.value} in settings, no default"
    missing = sorted(f"{name} ({where})" for name, where in read if not hasattr(django_settings, name))
    assert not missing, "settings read but never declared: " + ", ".join(missing)


def test_which_entries_are_live_is_written_once():
    """"Not withdrawn, not hidden by a curator" (and "scored", "on a board") is ``submissions.models``' live_q /
    scored_live_q / on_board_q: a query elsewhere that spells out ``hidden_by_curator`` restates the rule, and
    drifts from it the day it changes."""
    home = "submissions/models.py"
    lookups = {"filter", "exclude", "get", "Q"}
    found = []
    for path in source_files():
        rel = path.relative_to(ROOT).as_posix()
        if rel == home:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and _called_name(node) in lookups \
                    and any(k.arg and k.arg.endswith("hidden_by_curator") for k in node.keywords):
                found.append(f"{rel}:{node.lineno}")
    assert not found, f"use live_q / scored_live_q / on_board_q ({home}) instead of spelling the rule out: " \
        + ", ".join(found)


def test_the_gates_configuration_names_every_package():
    """CONTRIBUTING's claims about the gates, against pyproject's root_packages: every package sorted as
    first-party, type-checked by one of the two mypy runs, placed in the layers (but the wiring and the client, which
    have contracts of their own), and each whole-package "forbidden" contract forbids every other package (but the
    metric core, which any layer may use; the client's forbids that too), so a new package is covered; presentation's
    ("no model", docs/architecture.md) is one of them. A ruff
    per-file ignore names a file that exists."""
    config = _pyproject()
    packages = set(PACKAGES)
    assert packages <= set(config["tool"]["ruff"]["lint"]["isort"]["known-first-party"])
    mypy_django = configparser.ConfigParser()
    mypy_django.read(ROOT / "mypy-django.ini")
    django_files = {name.strip() for name in mypy_django["mypy"]["files"].split(",")}
    assert config["tool"]["mypy"]["files"] == ["evaluation"] and django_files == packages - {"evaluation"}
    contracts = config["tool"]["importlinter"]["contracts"]
    layered = set()
    for contract in contracts:
        if contract["type"] == "layers" and "containers" not in contract:
            layered |= {name.strip() for layer in contract["layers"] for name in layer.split("|")}
    assert layered == packages - {"lexboard", "lexboard_cli"}
    whole = [c for c in contracts if c["type"] == "forbidden" and set(c["source_modules"]) <= packages]
    assert {source for c in whole for source in c["source_modules"]} == {"evaluation", "lexboard", "lexboard_cli",
                                                                          "presentation"}
    for contract in whole:
        (source,) = contract["source_modules"]
        missing = packages - {source, "evaluation"} - set(contract["forbidden_modules"])
        assert not missing, f"{contract['name']}: forbid {sorted(missing)} too"
    for pattern in config["tool"]["ruff"]["lint"]["per-file-ignores"]:
        assert list(ROOT.glob(pattern)), f"ruff's per-file-ignores names {pattern}, which does not exist"


def test_tests_isolate_the_cache_by_the_one_fixture_and_never_clear_it():
    """A test starts from an empty cache through its own key prefix (tests/conftest.py: the ``own_cache`` mark,
    ``fresh_cache``), never ``cache.clear()``: on Redis that empties the database every process of the session
    shares (the other xdist process's pages and counters with it). And no conftest keeps its own copy of the shim."""
    home = TESTS / "conftest.py"
    cleared, copies = [], []
    for path in sorted(TESTS.rglob("*.py")):
        text = path.read_text()
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "clear" \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "cache":
                cleared.append(f"{rel}:{node.lineno}")
        if path != home and path.name == "conftest.py" and '["KEY_PREFIX"] =' in text:
            copies.append(rel)
    assert not cleared, "cache.clear() in tests (use the own_cache mark or fresh_cache): " + ", ".join(cleared)
    assert not copies, "a copy of the cache shim (tests/conftest.py has it): " + ", ".join(copies)


#: The maintainer's documents whose every file path and dotted name must exist.
MAINTAINER_DOCS = ("docs/architecture.md", "CONTRIBUTING.md")


def test_the_maintainers_documents_name_files_tests_and_names_that_exist():
    """Every `folder/file` in docs/architecture.md and CONTRIBUTING.md exists (a bare `services/` under some
    package), every `file.py::test_name` is a test there, and every dotted `package.module.name` imports (or is a
    registered Celery task's name): a rename that forgets the documents fails here."""
    app.loader.import_default_modules()  # the apps' tasks modules: the registered names
    dotted_name = re.compile(rf"`((?:{'|'.join(PACKAGES)})(?:\.\w+)+)`")
    wrong = []
    for doc in MAINTAINER_DOCS:
        text = (ROOT / doc).read_text()
        for path, test in re.findall(r"`((?:[A-Za-z_.-]+/)+[A-Za-z_.-]*)(?:::(\w+))?`", text):
            found = (ROOT / path).exists() or (path.count("/") == 1 and path.endswith("/")
                                               and any((ROOT / p / path).is_dir() for p in PACKAGES))
            if not found:
                wrong.append(f"{doc}: {path}")
            elif test and not re.search(rf"^def {test}\(", (ROOT / path).read_text(), re.M):
                wrong.append(f"{doc}: {path}::{test}")
        for name in set(dotted_name.findall(text)):
            if name in app.tasks:
                continue
            parts = name.split(".")
            obj = importlib.import_module(parts[0])
            for cut in range(2, len(parts) + 1):
                prefix = ".".join(parts[:cut])
                if hasattr(obj, "__path__") and importlib.util.find_spec(prefix) is not None:
                    obj = importlib.import_module(prefix)
                else:
                    obj = getattr(obj, parts[cut - 1], None)
                if obj is None:
                    break
            if obj is None:
                wrong.append(f"{doc}: {name}")
    assert not wrong, "the documents name what does not exist: " + ", ".join(sorted(wrong))


def test_no_empty_package_is_left_behind():
    """A folder whose only file is its ``__init__.py`` is what a move left behind (#26's leftovers): it says a
    package owns something it does not."""
    empty = sorted(init.parent.relative_to(ROOT).as_posix() for package in PACKAGES
                   for init in (ROOT / package).rglob("__init__.py")
                   if not any(p.name not in ("__init__.py", "__pycache__") for p in init.parent.iterdir()))
    assert not empty, "empty packages: " + ", ".join(empty)


def _layers_contract() -> list[set[str]]:
    config = _pyproject()
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"]
                   if c["type"] == "layers" and "containers" not in c]
    return [{name.strip() for name in layer.split("|")} for layer in contract["layers"]]


def test_the_layer_diagram_and_the_layer_chains_are_the_contract():
    """docs/architecture.md's diagram shows each layer of the contract, top to bottom, side by side where the
    contract says ``a | b``; CONTRIBUTING's chain (``demo > api | snapshots > …``) and the contract's own name
    say the same."""
    layers = _layers_contract()
    text = (ROOT / "docs" / "architecture.md").read_text()
    diagram = text[text.index("## Layers"):text.index("## Where each feature lives")]
    rows = [set(re.findall(r"(?:^  |\s{2,})([a-z_]+)/\s", line)) & set(PACKAGES)
            for line in diagram.splitlines() if re.match(r"^  [a-z_]+/", line)]
    rows = [row for row in rows if row - {"lexboard", "lexboard_cli"}]
    assert rows == layers, f"the diagram's rows {rows} are not the contract's layers {layers}"
    chain = " > ".join(" | ".join(sorted(layer)) for layer in layers)
    config = _pyproject()
    name = next(c["name"] for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    for where, said in (("CONTRIBUTING.md", re.sub(r"\s+", " ", (ROOT / "CONTRIBUTING.md").read_text())),
                        ("the contract's name", re.sub(r" \([^)]*\)", "", name))):
        found = re.search(r"demo > [a-z_ |>]+ > evaluation", said)
        assert found, f"{where} gives no chain of the layers"
        said_layers = [{n.strip() for n in layer.split("|")} for layer in found.group(0).split(" > ")]
        assert said_layers == layers, f"{where} says {found.group(0)!r}; the contract: {chain}"
    # The README's folder table runs "top to bottom" too.
    level = {name: i for i, layer in enumerate(layers) for name in layer}
    readme = [name for name in re.findall(r"^\| `([a-z_]+)/` \|", (ROOT / "README.md").read_text(), re.M) if name in level]
    assert sorted(readme, key=level.__getitem__) == readme, f"README's folder table is not top to bottom: {readme}"


def test_the_diagram_orders_the_submissions_services_as_the_contract():
    """The diagram's line "(inside services/: lifecycle|… > admission > inspection > … > the leaves)" is the
    contract that orders the modules of ``submissions.services``, layer by layer (the leaves unnamed)."""
    config = _pyproject()
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"]
                   if c.get("containers") == ["submissions.services"]]
    layers = [{name.strip() for name in layer.split("|")} for layer in contract["layers"]]
    text = (ROOT / "docs" / "architecture.md").read_text()
    found = re.search(r"\(inside services/:([^)]*)\)", text)
    assert found, "the diagram does not order the submissions' services"
    said = [{name.strip() for name in layer.split("|")}
            for layer in re.sub(r"\s*│\s*", " ", found.group(1)).split(">")]
    assert said[-1] == {"the leaves"} and said[:-1] == layers[:-1], f"the diagram says {said}; the contract {layers}"


def test_make_check_runs_these_tests():
    """CONTRIBUTING lists this file among the gates: ``make check`` (which .ci/run runs before the tests) runs it."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile[makefile.index("\ncheck-code:"):].split("\n\n", 1)[0]
    assert "tests/architecture" in recipe, "make check-code does not run tests/architecture"
