"""No state shared across threads without a test that races it, checked on the source.

A server serves requests and runs jobs in many threads of one process, and every one of them
sees a module's globals. This test reads ``src/remem`` and finds each piece of such state: a
container a module makes at import (``{}``, ``[]``, ``set()``, ``OrderedDict()``, a weak
dictionary...) that a function writes to, and each name a function rebinds with ``global``.
Each must be listed in :data:`RACED` with the test that races it; a new one fails here until
it has one (tests/project/test_state_races.py holds most of them). Containers filled only
while the module is imported are left out: imports are serialised by Python's import lock.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "remem"
ROOT = SRC.parents[1]

_CONTAINERS = {"dict", "set", "list", "OrderedDict", "defaultdict", "deque", "Counter",
               "WeakValueDictionary", "WeakKeyDictionary", "WeakSet"}
_WRITES = {"add", "append", "clear", "pop", "update", "setdefault", "remove", "discard",
           "insert", "extend", "move_to_end", "popitem", "appendleft", "popleft"}

_RACES = "tests/project/test_state_races.py"

#: each piece of shared state (``module:name``) and the test that races it (``file::test``)
RACED: dict[str, str] = {
    "remem.store.ann:_pool": f"{_RACES}::test_the_scan_pool_is_made_once_for_every_thread",
    "remem._sqlite:_WRITE_LOCKS":
        f"{_RACES}::test_one_write_lock_per_file_however_its_path_is_spelled",
    "remem._http:_block_remote":
        f"{_RACES}::test_blocking_remote_requests_is_seen_whole_by_racing_checks",
    "remem.background.access:_LIVE":
        f"{_RACES}::test_the_exit_flush_walks_recorders_while_threads_make_more",
    "remem.usage.recorder:_LIVE":
        f"{_RACES}::test_the_exit_flush_walks_recorders_while_threads_make_more",
    "remem.background.consolidation:_RUNS":
        f"{_RACES}::test_consolidation_runs_registered_while_a_worker_looks_one_up",
    "remem.background.kinds:_KINDS":
        f"{_RACES}::test_job_kinds_registered_while_workers_build_their_handlers",
    "remem.background.kinds:_LOADERS":
        f"{_RACES}::test_kind_loaders_run_once_however_many_readers_ask_first",
    "remem.background.queue:_BESIDE_MEMORY":
        f"{_RACES}::test_queues_beside_one_in_memory_store_share_its_jobs",
    "remem.context.assemble:_REGISTERED":
        f"{_RACES}::test_context_sections_registered_while_others_assemble",
    "remem.graph.storage:_SHARED":
        f"{_RACES}::test_graphs_beside_one_file_share_one_storage",
    "remem.memory.manager:_SCHEMAS":
        f"{_RACES}::test_fixed_schemas_are_built_once_and_handed_out_as_copies",
    "remem.memory.observers:_observers":
        f"{_RACES}::test_one_observer_per_store_while_the_factory_changes",
    "remem.memory.observers:_factory":
        f"{_RACES}::test_one_observer_per_store_while_the_factory_changes",
    "remem.retrieval.tokenize:_segmenter":
        f"{_RACES}::test_the_chinese_segmenter_is_imported_once_for_every_thread",
    "remem.server.errors:_SCALARS":
        f"{_RACES}::test_racing_apps_refuse_repeated_parameters_and_wrong_methods",
    "remem.server.routes_files:_set":
        f"{_RACES}::test_each_server_keeps_the_file_policy_set_on_it",
    "remem.server.routes_files:_from_env":
        f"{_RACES}::test_a_file_policy_from_the_environment_is_read_once",
    "remem.store.bad_records:_counts":
        f"{_RACES}::test_bad_records_counted_exactly_from_racing_readers",
    "remem.store.bad_records:_logged":
        f"{_RACES}::test_bad_records_counted_exactly_from_racing_readers",
    "remem.store.bad_records:_listeners":
        f"{_RACES}::test_bad_records_counted_exactly_from_racing_readers",
    "remem.usage.storage:_OF_MEMORY":
        f"{_RACES}::test_usage_counters_beside_one_in_memory_store_are_one_storage",
    "remem.store.types:_ITEM_NAMESPACES":
        f"{_RACES}::test_item_namespaces_validated_across_the_cache_limit",
}


def _is_container(value: ast.expr) -> bool:
    if isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp
                  | ast.SetComp):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else (
            func.attr if isinstance(func, ast.Attribute) else "")
        return name in _CONTAINERS
    return False


def _module_containers(tree: ast.Module) -> set[str]:
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and _is_container(node.value):
            found |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif (isinstance(node, ast.AnnAssign) and node.value is not None
              and _is_container(node.value) and isinstance(node.target, ast.Name)):
            found.add(node.target.id)
    return found


def _written_in_functions(tree: ast.Module, names: set[str]) -> set[str]:
    """The names of ``names`` a function body writes into, and those it rebinds globally."""
    written: set[str] = set()
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Global):
                written |= set(node.names)
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign | ast.Delete):
                targets = list(node.targets)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            written |= {t.value.id for t in targets if isinstance(t, ast.Subscript)
                        and isinstance(t.value, ast.Name) and t.value.id in names}
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in _WRITES and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in names):
                written.add(node.func.value.id)
    return written


def shared_state() -> set[str]:
    """Every ``module:name`` of ``src/remem`` that threads share and a function changes."""
    found: set[str] = set()
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        found |= {f"{module}:{name}"
                  for name in _written_in_functions(tree, _module_containers(tree))}
    return found


def _test_exists(node_id: str) -> bool:
    file, name = node_id.split("::")
    tree = ast.parse((ROOT / file).read_text(encoding="utf-8"))
    return any(isinstance(node, ast.FunctionDef) and node.name == name for node in tree.body)


def test_every_piece_of_shared_state_has_a_test_that_races_it() -> None:
    found = shared_state()
    missing = sorted(found - set(RACED))
    assert not missing, (
        f"module-level state written at run time without a race test: {missing}; add a test "
        f"that races it (see {_RACES}) and list it in RACED, or keep the state per object")
    gone = sorted(set(RACED) - found)
    assert not gone, f"RACED lists state that is no longer there: {gone}"


def test_each_listed_race_test_exists() -> None:
    absent = sorted(test for test in set(RACED.values()) if not _test_exists(test))
    assert not absent, f"RACED names tests that do not exist: {absent}"


def test_the_scan_finds_what_it_looks_for() -> None:
    source = ast.parse(
        "CACHE = {}\nSEEN: set[str] = set()\nREAD_ONLY = {'a': 1}\nFLAG = False\n"
        "LATE = []\nLATE.append(1)\n"  # filled at import only
        "def f(k):\n    CACHE[k] = 1\n    SEEN.add(k)\n    return READ_ONLY[k]\n"
        "def g():\n    global FLAG\n    FLAG = True\n")
    assert _written_in_functions(source, _module_containers(source)) == {
        "CACHE", "SEEN", "FLAG"}
