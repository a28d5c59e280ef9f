"""A dbt project's semantic layer, read as dbt reads it: `dbt-semantic-interfaces` (DSI) objects.

dbt-core turns the YAML a person writes into a semantic manifest before DSI parses and validates it;
this module does that step for the parts a semantic manifest holds: `model: ref('x')` becomes the
node relation, metric inputs written as names become objects, `meta` moves into `config` and dbt's
access `group` is dropped. Each semantic model and metric is then checked against DSI's own schema
and parsed by DSI's own classes, one at a time, so that one invalid item is reported and skipped
rather than ending the import; DSI's validator then reports what dbt itself would refuse.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
from dbt_semantic_interfaces.implementations.metric import PydanticMetric
from dbt_semantic_interfaces.implementations.project_configuration import PydanticProjectConfiguration
from dbt_semantic_interfaces.implementations.semantic_manifest import PydanticSemanticManifest
from dbt_semantic_interfaces.implementations.semantic_model import PydanticSemanticModel
from dbt_semantic_interfaces.parsing.schemas import (
    TRANSFORM_OBJECT_NAME_PATTERN,
    metric_validator,
    semantic_model_validator,
)
from dbt_semantic_interfaces.transformations.semantic_manifest_transformer import (
    PydanticSemanticManifestTransformer,
)
from dbt_semantic_interfaces.validations.semantic_manifest_validator import SemanticManifestValidator

from cli.semantic_names import clip
from shared.data import strict_yaml

SKIPPED_DIRS = frozenset({"target", "dbt_packages", "dbt_modules", "logs", "node_modules"})  # dbt's output, packages
# ref('orders'), ref('package', 'orders'), ref('orders', v=2), also written inside {{ }}: dbt-core resolves
# refs with Jinja before DSI sees a node relation; the import needs only the model's name.
_REF = re.compile(r"""^\s*(?:\{\{\s*)?ref\(\s*(?:['"][^'"]+['"]\s*,\s*)?['"]([^'"]+)['"]
                     \s*(?:,[^)]*)?\)\s*(?:\}\})?\s*$""", re.X)
_ELEMENTS = ("entities", "dimensions", "measures")
# Enum-valued keys dbt-core reads in any case (`agg: Count`), DSI's schema in lower or upper case only.
_ENUM_KEYS = ("type", "agg")
# DSI logs what its transformations skip; the import's report says what matters, once.
logging.getLogger("dbt_semantic_interfaces").addHandler(logging.NullHandler())
logging.getLogger("dbt_semantic_interfaces").propagate = False
MAX_PROBLEM = 240  # characters of a schema problem in one report line
NAME_RULE = "lower-case letters, digits and single underscores, from a letter to a letter or digit"


class DbtImportError(Exception):
    """The input is unusable (no semantic models, a YAML error): one line that names the file."""


class Report:
    """What was not converted (or converted differently), one plain line per item, in reading order."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, subject: str, message: str) -> None:
        # One line, whatever the project's names hold: the line is also a comment in the model file,
        # where a line break would start YAML of its own.
        self.lines.append(" ".join(f"{subject}: {message}".split()))


@dataclass
class Project:
    name: str | None
    semantic_models: list[PydanticSemanticModel] = field(default_factory=list)
    metrics: list[PydanticMetric] = field(default_factory=list)
    found: int = 0  # semantic models in the YAML, parsed or not
    refused: int = 0  # items dbt's schema refused (then dbt's validator would only repeat their absence)
    refused_measures: set[str] = field(default_factory=set)  # measures of semantic models not parsed


def load_yaml(path: Path) -> object:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DbtImportError(f"{path}: cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return strict_yaml.load(text)  # names the line of a duplicate key, which DSI's loader does not
    except strict_yaml.YamlProblem as exc:
        raise DbtImportError(f"{path}: {exc}") from None


def yaml_files(root: Path) -> list[Path]:
    """Every *.yml/*.yaml under `root`, sorted; not in dbt's output or package folders, nor hidden ones."""
    if root.is_file():
        return [root]
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d not in SKIPPED_DIRS)
        found += [Path(folder) / name for name in sorted(files) if name.endswith((".yml", ".yaml"))]
    return found


def read_project(root: Path, report: Report) -> Project:
    if not root.exists():
        raise DbtImportError(f"{root}: no such file or directory")
    settings = root / "dbt_project.yml"
    project_file = load_yaml(settings) if settings.is_file() else None
    name = project_file.get("name") if isinstance(project_file, dict) else None
    project = Project(name if isinstance(name, str) and name.strip() else None)
    for path in yaml_files(root):
        document = project_file if path == settings else load_yaml(path)
        if isinstance(document, dict):
            _read_document(document, path, project, report)
    if not project.found:
        raise DbtImportError(f"{root}: no dbt semantic models (no YAML file under it has semantic_models:)")
    return project


def _items(document: dict, key: str, path: Path, report: Report) -> list[dict]:
    value = document.get(key)
    if key in document and not isinstance(value, list):
        report.add(f"file {path}", f"{key} is not a list; the file's {key} were not read")
        return []
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _read_document(document: dict, path: Path, project: Project, report: Report) -> None:
    for raw in _items(document, "semantic_models", path, report):
        project.found += 1
        subject = f"semantic model {raw.get('name')}"
        parsed = _disabled(raw, subject, report) or _parse(
            PydanticSemanticModel, semantic_model_validator, _as_manifest_model(raw, report), subject, report, project)
        if isinstance(parsed, PydanticSemanticModel):
            project.semantic_models.append(parsed)
        else:
            project.refused_measures |= {m["name"] for m in raw.get("measures") or []
                                         if isinstance(m, dict) and isinstance(m.get("name"), str)}
    for raw in _items(document, "metrics", path, report):
        subject = f"metric {raw.get('name')}"
        parsed = _disabled(raw, subject, report) or _parse(PydanticMetric, metric_validator, _as_manifest_metric(raw),
                                                           subject, report, project)
        if isinstance(parsed, PydanticMetric):
            project.metrics.append(parsed)
    if any("semantic_model" in model for model in _items(document, "models", path, Report())):
        report.add(f"file {path}", "models with a semantic_model block (dbt's newer spec without measures) "
                                   "are not read; only top-level semantic_models and metrics are")


def _disabled(raw: dict, subject: str, report: Report) -> bool:
    """An item dbt leaves out (`config: {enabled: false}`): said, and not read."""
    if isinstance(raw.get("config"), dict) and raw["config"].get("enabled") is False:
        report.add(subject, "not converted: it is disabled in dbt (config.enabled: false)")
        return True
    return False


def _schema_view(item: dict) -> dict:
    """The item as DSI's schema checks it: an entity's `description`, which dbt and DSI's classes read but
    the schema does not list, is left out of the check (and kept for the parse)."""
    if not isinstance(item.get("entities"), list):
        return item
    entities = [{k: v for k, v in e.items() if k != "description"} if isinstance(e, dict) else e
                for e in item["entities"]]
    return {**item, "entities": entities}


def _parse(kind, validator, item: dict, subject: str, report: Report, project: Project):
    """One item through DSI's schema and class, or None with one line that says what dbt refuses."""
    try:
        validator.validate(_schema_view(item))
        return kind.parse_obj(item)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(part) for part in exc.absolute_path)
        message = exc.message
        if exc.validator == "pattern" and exc.validator_value == TRANSFORM_OBJECT_NAME_PATTERN:
            message = f"{exc.instance!r} is not a dbt name: {NAME_RULE}"
        problem = f"{where}: {message}" if where else message
    except Exception as exc:  # noqa: BLE001 - DSI's parsers raise their own and pydantic's errors
        problem = str(exc)
    report.add(subject, f"not converted: dbt's schema refuses it ({clip(problem, MAX_PROBLEM)})")
    project.refused += 1
    return None


# --- dbt's YAML → a semantic manifest's objects --------------------------------------


def _with_config_meta(raw: dict) -> dict:
    """dbt reads `meta` beside an item as its `config.meta`, which is where the manifest keeps it; of the rest
    of `config` (enabled, group, ...) dbt-core keeps nothing in the manifest. Enum values in lower case."""
    item = {key: value for key, value in raw.items() if key != "meta"}
    config = raw.get("config") if isinstance(raw.get("config"), dict) else {}
    meta = {**(raw["meta"] if isinstance(raw.get("meta"), dict) else {}),
            **(config["meta"] if isinstance(config.get("meta"), dict) else {})}
    item.pop("config", None)
    if meta:
        item["config"] = {"meta": meta}
    for key in _ENUM_KEYS:
        if isinstance(item.get(key), str):
            item[key] = item[key].lower()
    return item


def _as_manifest_model(raw: dict, report: Report) -> dict:
    item = _with_config_meta(raw)
    name = item.get("name")
    reference = item.pop("model", None)
    found = _REF.match(reference) if isinstance(reference, str) else None
    if found is None and isinstance(name, str):
        report.add(f"semantic model {name}", f"model {reference!r} is not ref('...'); table {name} assumed")
    # The schema is the warehouse URL's to choose: Tessera reads tables in the one it connects to.
    item["node_relation"] = {"alias": found.group(1) if found else str(name), "schema_name": ""}
    for key in _ELEMENTS:
        if isinstance(item.get(key), list):
            item[key] = [_element(element) if isinstance(element, dict) else element for element in item[key]]
    return item


def _element(raw: dict) -> dict:
    element = _with_config_meta(raw)
    params = element.get("type_params")
    if isinstance(params, dict) and isinstance(params.get("time_granularity"), str):
        element["type_params"] = {**params, "time_granularity": params["time_granularity"].lower()}
    return element


def _metric_input(value: object) -> object:
    """A ratio's or derived metric's input written as a bare name, as dbt allows: {name: ...}."""
    return {"name": value} if isinstance(value, str) else value


def _as_manifest_metric(raw: dict) -> dict:
    item = _with_config_meta({key: value for key, value in raw.items() if key != "group"})  # access is dbt's
    params = item.get("type_params")
    if isinstance(params, dict):
        params = dict(params)
        for key in ("numerator", "denominator"):
            if key in params:
                params[key] = _metric_input(params[key])
        if isinstance(params.get("metrics"), list):
            params["metrics"] = [_metric_input(value) for value in params["metrics"]]
        item["type_params"] = params
    return item


# --- what dbt would refuse -------------------------------------------------------------


def report_validation(project: Project, report: Report) -> None:
    """DSI's validator over the parsed project, as dbt runs it: its errors, one line each.

    The import goes on: Tessera's conversion reports what it cannot convert on its own terms, and an
    error here (a measure without an aggregation time dimension, say) is the project's to fix for dbt. With
    items dbt's schema refused, the validator would report their absence as errors of their own: not run.
    """
    if project.refused:
        report.add("dbt's validator", f"not run: dbt's schema refuses {project.refused} item(s) above; fix those, "
                                      "then import again to have the project checked as dbt checks it")
        return
    manifest = PydanticSemanticManifest(semantic_models=project.semantic_models, metrics=project.metrics,
                                        project_configuration=PydanticProjectConfiguration(
                                            time_spine_table_configurations=[], time_spines=[]))
    try:
        checked = SemanticManifestValidator().validate_semantic_manifest(
            PydanticSemanticManifestTransformer.transform(manifest))
    except Exception as exc:  # noqa: BLE001 - a validator that cannot run is reported, not fatal
        report.add("dbt's validator", f"could not check the project ({clip(str(exc), MAX_PROBLEM)})")
        return
    for issue in checked.errors:
        report.add("dbt's validator", clip(issue.message, MAX_PROBLEM))
