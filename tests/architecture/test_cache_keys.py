"""One key function for everything the pages cache (#40): ``catalogue.page_generation.cache_key``.

The check reads the source (``ast``). Every call of a cache method (``get``, ``set``, ``add``, ``get_many``,
``set_many``, ``delete``, ``incr``, …) on Django's cache (``cache``, ``caches[…]``) or on a parameter typed as a
store of cached values (a ``Protocol`` of the project with such methods: ``leaderboard.significance.PValueStore``)
must be given its key(s) as

* a call of ``cache_key``, or of a function of the project annotated to return a ``CacheKey``;
* a name bound, in its function or its module (or imported from the module that binds it), only to such calls, to
  the element of a returned tuple the callee annotates ``CacheKey``, or annotated ``CacheKey`` (a parameter, a
  variable, a container of them: ``dict[…, CacheKey]``); an element (``names[k]``), ``list(names.values())``;
* for the many-key methods, a list, dict or comprehension whose every key is one of those.

``CacheKey`` is a ``NewType``: mypy (``make check-types``) refuses a plain string where one is annotated, and only
``catalogue/page_generation.py`` makes one. So an f-string, a concatenation or a constant given as a key fails
here; build it with ``cache_key`` (a new kind in ``CacheKind``).

Not page caches, so not built by ``cache_key`` (its docstring says so): :data:`NOT_PAGE_CACHES`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import pytest

from catalogue.page_generation import GENERATION_KEY, CacheKind, Variant, cache_key
from tests.project import ROOT, source_files

OWNER = "catalogue/page_generation.py"
KEY_FUNCTION = "cache_key"
KEY_TYPE = "CacheKey"
CACHE_METHODS = {"get", "set", "add", "delete", "get_many", "set_many", "delete_many", "incr", "decr",
                 "get_or_set", "touch", "has_key", "aget", "aset", "aadd", "adelete", "aget_many", "aset_many",
                 "adelete_many", "aincr", "adecr", "aget_or_set", "atouch", "ahas_key"}
#: The methods whose first argument is several keys (a list, or a dict of keys to values).
MANY = {"get_many", "set_many", "delete_many", "aget_many", "aset_many", "adelete_many"}

#: file → why its keys are not built by ``cache_key``.
NOT_PAGE_CACHES: dict[str, str] = {
    "submissions/services/queue.py": "the rescoring's deduplication marks (a message sent, not a page)",
    "submissions/services/rescoring.py": "the rescoring's deduplication marks and counts (queue.rescoring_*_key)",
    "submissions/throttling.py": "rate-limit counters, kept in the database table by their lexboard:rl: prefix "
                                 "(lexboard/shared_counters_cache.py)",
    "lexboard/redis_cache.py": "the cache backend itself (keys it is handed)",
    "lexboard/shared_counters_cache.py": "the cache backend itself (keys it is handed)",
}


# --- the checker ------------------------------------------------------------------------------------------------


@dataclass
class _Scope:
    """What a function (or the module) binds: each name's values, annotations, and tuple-unpacking sources."""

    values: dict[str, list[ast.expr]] = field(default_factory=dict)
    annotated: dict[str, str] = field(default_factory=dict)
    unpacked: dict[str, list[tuple[ast.expr, int]]] = field(default_factory=dict)  # name → (call, position)
    looped: dict[str, list[ast.expr]] = field(default_factory=dict)  # name → iterables it is a loop target of
    parent: _Scope | None = None

    def lookup(self, name: str) -> _Scope | None:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.values or name in scope.annotated or name in scope.unpacked or name in scope.looped:
                return scope
            scope = scope.parent
        return None


def _bind(scope: _Scope, node: ast.AST) -> None:
    """Record what ``node`` (a statement of the scope's own body, not of a nested function) binds."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Name):
                scope.values.setdefault(target.id, []).append(node.value)
            elif isinstance(target, ast.Tuple):
                for position, element in enumerate(target.elts):
                    if isinstance(element, ast.Name):
                        scope.unpacked.setdefault(element.id, []).append((node.value, position))
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        scope.annotated[node.target.id] = ast.unparse(node.annotation)
        if node.value is not None:
            scope.values.setdefault(node.target.id, []).append(node.value)
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        scope.values.setdefault(node.target.id, []).append(ast.Constant(None))  # ``key += …``: never a key
    elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
        names = [node.target] if isinstance(node.target, ast.Name) else getattr(node.target, "elts", [])
        for name in names:
            if isinstance(name, ast.Name):
                scope.looped.setdefault(name.id, []).append(node.iter)
    elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
        scope.values.setdefault(node.target.id, []).append(node.value)


@dataclass
class _Module:
    path: str
    tree: ast.Module
    scope: _Scope
    imported: dict[str, tuple[str, str]]  # local name → (module, its name there)
    function_scopes: dict[ast.AST, _Scope]


def _scopes(tree: ast.Module) -> tuple[_Scope, dict[ast.AST, _Scope]]:
    """The module's scope and each function's, built over the statements each owns."""
    module = _Scope()
    functions: dict[ast.AST, _Scope] = {}

    def walk(node: ast.AST, scope: _Scope) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                inner = _Scope(parent=scope)
                arguments = child.args
                for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                                 *filter(None, [arguments.vararg, arguments.kwarg])]:
                    if argument.annotation is not None:
                        inner.annotated[argument.arg] = ast.unparse(argument.annotation)
                    else:
                        inner.values.setdefault(argument.arg, [])  # bound, to nothing known
                functions[child] = inner
                walk(child, inner)
            else:
                _bind(scope, child)
                walk(child, scope)

    walk(tree, module)
    return module, functions


def _module_name(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


class Checker:
    """The key expressions of the project's cache calls, judged against the rule of this file's docstring."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.modules: dict[str, _Module] = {}
        self.builders: set[str] = {KEY_FUNCTION}
        self.tuple_builders: dict[str, list[bool]] = {}  # function → which returned elements are keys
        self.stores: set[str] = set()  # Protocol classes with cache methods
        for path, source in sources.items():
            tree = ast.parse(source)
            scope, functions = _scopes(tree)
            imported = {}
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module:
                    for alias in node.names:
                        imported[alias.asname or alias.name] = (node.module, alias.name)
            self.modules[_module_name(path)] = _Module(path, tree, scope, imported, functions)
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
                    returns = node.returns
                    if isinstance(returns, ast.Subscript) and ast.unparse(returns.value) == "tuple" \
                            and isinstance(returns.slice, ast.Tuple):
                        self.tuple_builders[node.name] = [KEY_TYPE in ast.unparse(e) for e in returns.slice.elts]
                    elif KEY_TYPE in ast.unparse(returns):
                        self.builders.add(node.name)
                elif isinstance(node, ast.ClassDef) and any(ast.unparse(b).endswith("Protocol") for b in node.bases):
                    if any(isinstance(f, ast.FunctionDef) and f.name in CACHE_METHODS for f in node.body):
                        self.stores.add(node.name)

    # -- receivers

    def _is_cache(self, receiver: ast.expr, scope: _Scope, module: _Module) -> bool:
        if isinstance(receiver, ast.Subscript) and ast.unparse(receiver.value) == "caches":
            return True
        if not isinstance(receiver, ast.Name):
            return False
        if module.imported.get(receiver.id) == ("django.core.cache", "cache"):
            return True
        owner = scope.lookup(receiver.id)
        annotation = owner.annotated.get(receiver.id, "") if owner else ""
        return any(store in annotation for store in self.stores)

    # -- keys

    @staticmethod
    def _called(node: ast.expr) -> str | None:
        if isinstance(node, ast.Call):
            func = node.func
            return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        return None

    def is_key(self, node: ast.expr, scope: _Scope, module: _Module, seen: frozenset[str] = frozenset()) -> bool:
        called = self._called(node)
        if called is not None:
            if called in self.builders:
                return True
            assert isinstance(node, ast.Call)
            if called == "list" and len(node.args) == 1:  # list(names.values()), list(names)
                inner = node.args[0]
                if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                        and inner.func.attr in ("values", "keys"):
                    inner = inner.func.value
                return self._annotated_key(inner, scope)
            return False
        if isinstance(node, ast.IfExp):
            return self.is_key(node.body, scope, module, seen) and self.is_key(node.orelse, scope, module, seen)
        if isinstance(node, ast.Subscript):
            return self._annotated_key(node.value, scope)
        if isinstance(node, ast.Name):
            return self._name_is_key(node.id, scope, module, seen)
        return False

    @staticmethod
    def _annotated_key(node: ast.expr, scope: _Scope) -> bool:
        if not isinstance(node, ast.Name):
            return False
        owner = scope.lookup(node.id)
        return owner is not None and KEY_TYPE in owner.annotated.get(node.id, "")

    def _name_is_key(self, name: str, scope: _Scope, module: _Module, seen: frozenset[str]) -> bool:
        if name in seen:
            return False
        seen = seen | {name}
        owner = scope.lookup(name)
        if owner is None:
            source = module.imported.get(name)
            other = self.modules.get(source[0]) if source else None
            return other is not None and self._name_is_key(source[1], other.scope, other, frozenset())
        if KEY_TYPE in owner.annotated.get(name, ""):
            return True
        bindings = 0
        for value in owner.values.get(name, []):
            bindings += 1
            if not self.is_key(value, owner, module, seen):
                return False
        for call, position in owner.unpacked.get(name, []):
            bindings += 1
            shape = self.tuple_builders.get(self._called(call) or "")
            if shape is None or position >= len(shape) or not shape[position]:
                return False
        for iterable in owner.looped.get(name, []):
            bindings += 1
            if not self._annotated_key(iterable, owner):
                return False
        return bindings > 0

    def _keys_of(self, node: ast.expr, scope: _Scope, module: _Module) -> bool:
        """The keys of a many-key call: a list or tuple of keys, a dict or dict comprehension keyed by them."""
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return all(self.is_key(e, scope, module) for e in node.elts)
        if isinstance(node, ast.Dict):
            return all(k is not None and self.is_key(k, scope, module) for k in node.keys)
        if isinstance(node, ast.DictComp | ast.ListComp | ast.SetComp | ast.GeneratorExp):
            inner = _Scope(parent=scope)
            for generator in node.generators:
                _bind(inner, generator)
            return self.is_key(node.key if isinstance(node, ast.DictComp) else node.elt, inner, module)
        return self.is_key(node, scope, module)

    # -- the findings

    def findings(self, exempt: frozenset[str] = frozenset()) -> list[str]:
        wrong = []
        for module in self.modules.values():
            if module.path in exempt:
                continue

            def visit(node: ast.AST, scope: _Scope, module: _Module = module) -> None:
                for child in ast.iter_child_nodes(node):
                    inner = module.function_scopes.get(child, scope)
                    if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) \
                            and child.func.attr in CACHE_METHODS and self._is_cache(child.func.value, scope, module):
                        given = child.args[0] if child.args else next(
                            (k.value for k in child.keywords if k.arg in ("key", "keys", "data")), None)
                        many = child.func.attr in MANY
                        ok = given is not None and (self._keys_of(given, scope, module) if many
                                                    else self.is_key(given, scope, module))
                        if not ok:
                            wrong.append(f"{module.path}:{child.lineno}: {ast.unparse(child)[:100]}")
                    if self._called(child) == KEY_TYPE and module.path != OWNER:
                        wrong.append(f"{module.path}:{child.lineno}: makes a {KEY_TYPE} itself")
                    visit(child, inner)

            visit(module.tree, module.scope)
        return wrong


def _project_sources() -> dict[str, str]:
    return {path.relative_to(ROOT).as_posix(): path.read_text() for path in source_files()}


# --- the tests ---------------------------------------------------------------------------------------------------


def test_every_cache_key_of_the_pages_is_built_by_the_one_key_function():
    wrong = Checker(_project_sources()).findings(frozenset(NOT_PAGE_CACHES))
    assert not wrong, ("cache keys built outside catalogue.page_generation.cache_key (give it a CacheKind, or "
                       "list the file in NOT_PAGE_CACHES with why it is no page cache):\n" + "\n".join(wrong))


def test_the_exempt_files_exist_and_the_key_function_says_what_it_does_not_build():
    assert all((ROOT / path).exists() for path in NOT_PAGE_CACHES), "NOT_PAGE_CACHES names a file that is gone"
    doc = ast.get_docstring(next(node for node in ast.parse((ROOT / OWNER).read_text()).body
                                 if isinstance(node, ast.FunctionDef) and node.name == KEY_FUNCTION)) or ""
    for path in ("submissions/services/queue.py", "submissions/throttling.py"):
        assert path in doc, f"cache_key's docstring does not say that {path}'s keys are no page cache"


_GOOD = '''
from django.core.cache import cache
from catalogue.page_generation import CacheKind, CacheKey, cache_key, GENERATION_KEY

def page(request) -> CacheKey:
    return cache_key(CacheKind.PAGE, request.path)

def both(request) -> tuple[bool, CacheKey]:
    return True, page(request)

def view(request, split, given: CacheKey):
    key = cache_key(CacheKind.LEADERBOARD_ROWS, split=split)
    cache.get(key)
    cache.set(page(request), 1)
    _, wanted = both(request)
    cache.get_many([GENERATION_KEY, wanted, given])
    cache.set_many({key: 1, page(request): 2})
    names: dict[int, CacheKey] = {i: page(request) for i in range(3)}
    cache.get_many(list(names.values()))
    cache.set_many({names[i]: 0 for i in names})
    locks: list[tuple[str, CacheKey]] = []
    for _path, lock in locks:
        cache.delete(lock)
'''

_OWNER = '''
from typing import NewType
from django.core.cache import cache
CacheKey = NewType("CacheKey", str)
def cache_key(kind, *parts) -> CacheKey:
    return CacheKey(":".join(map(str, (kind, *parts))))
GENERATION_KEY = cache_key("page:generation")
'''


@pytest.mark.parametrize("bad", [
    'cache.get(f"lexboard:page:{request.path}")',
    'cache.set("lexboard:lb:" + str(split.pk), 1)',
    'cache.delete(page(request) + ":render")',
    'key = f"lexboard:x:{split.pk}"\n    cache.get(key)',
    'key = cache_key(CacheKind.PAGE, 1)\n    key = key + ":gz"\n    cache.get(key)',
    'cache.get_many([GENERATION_KEY, "lexboard:page:other"])',
    'cache.set_many({f"lexboard:{i}": i for i in range(3)})',
    'ok, wanted = both(request)\n    cache.get(ok)',
    'cache.add(CacheKey("lexboard:lock"), 1)',
    'from django.core.cache import caches\n    caches["default"].get("lexboard:x")',
])
def test_the_checker_finds_a_key_built_elsewhere(bad):
    source = _GOOD + "\n\ndef bad(request, split):\n    " + bad + "\n"
    wrong = Checker({"catalogue/page_generation.py": _OWNER, "leaderboard/example.py": source}).findings()
    assert [line for line in wrong if line.startswith("leaderboard/example.py")], bad


def test_the_checker_passes_keys_built_by_the_key_function():
    assert Checker({"catalogue/page_generation.py": _OWNER, "leaderboard/example.py": _GOOD}).findings() == []


def test_the_checker_sees_the_project_s_cache_calls():
    """The rule is not vacuous: it judges the page cache's, the boards' and the disclosure's calls."""
    checker = Checker(_project_sources())
    assert {"page_key", "p_value_name", "rows_cache_key"} <= checker.builders
    assert "PValueStore" in checker.stores
    calls = {module.path for module in checker.modules.values() for node in ast.walk(module.tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr in CACHE_METHODS and checker._is_cache(node.func.value, _Scope(), module)}
    assert {"leaderboard/page_cache.py", "leaderboard/selectors.py", "submissions/disclosure.py",
            "participants/analysis.py", "catalogue/page_generation.py"} <= calls


def test_the_key_function_keeps_every_key_as_it_was():
    """The format did not move with the function: the keys cached before (docs/performance.md) are the same."""
    @dataclass
    class Split:
        pk: int = 7
        cache_version: int = 3
        current_qrels_id: int | None = 11
        hidden: bool = True

    assert GENERATION_KEY == "lexboard:page:generation"
    assert cache_key(CacheKind.LEADERBOARD_ROWS, split=Split()) == "lexboard:lb:v5:7:3:11:1"
    assert cache_key(CacheKind.SIGNIFICANCE, "R@10", split=Split()) == "lexboard:sig:v5:7:3:11:1:R@10"
    assert cache_key(CacheKind.PAGE, "/d/x/", "-", variant=Variant.GZIP) == "lexboard:page:v6:/d/x/:-:gz"
    assert cache_key(CacheKind.API_LEADERBOARD_TAG, 4, "ab") == "lexboard:page:v1:api-leaderboard:4:ab"
    with pytest.raises(ValueError, match="takes a split"):
        cache_key(CacheKind.POWER, "R@10")
    with pytest.raises(ValueError, match="takes no split"):
        cache_key(CacheKind.PAGE, "/", split=Split())
