"""Every third-party import of the shipped code is declared, and the installed one fits."""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("desktop", "server_manager", "longdoc_net")


def third_party_imports() -> dict[str, set[str]]:
    """Top-level module name -> the files importing it, for non-stdlib, non-project modules."""
    found: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in (*PACKAGES, "__future__"):
                        found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_import_is_a_declared_dependency_that_fits() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {
        Requirement(line).name.lower().replace("_", "-"): Requirement(line)
        for line in project["dependencies"]
    }
    providers = metadata.packages_distributions()
    for module, files in sorted(third_party_imports().items()):
        dists = {d.lower().replace("_", "-") for d in providers.get(module, [])}
        matches = dists & set(declared)
        assert matches, f"{module} (imported by {sorted(files)}) is not in dependencies"
        for dist in matches:
            installed = metadata.version(dist)
            assert declared[dist].specifier.contains(installed, prereleases=True), (
                f"{dist} {installed} is outside the declared {declared[dist].specifier}"
            )
