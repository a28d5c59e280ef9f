"""Component contracts and catalogs (§6), loaded once at startup.

One YAML file per component: name, revision, an inline, synchronous JSON
Schema (draft-07, object root) for its props, slots, event ports, which props
bind an offered resource / evidence / state / action, chart recipes, and a
prompt summary. Schemas may not reference or identify anything (`$ref`,
`$id`, `$schema`, anchors, async keywords …): every `$` keyword is refused,
wherever it appears as a keyword. Any problem stops startup with a message
naming the file.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared.data import strict_yaml
from shared.data.bounded_json import canonical
from shared.data.schema_check import compile_check

MAX_COMPONENTS = 32
CATALOGS_DIR = Path(__file__).parent / "catalogs"
DEFAULT_CATALOG = CATALOGS_DIR / "tessera.data" / "v1"
# Keywords whose values are schemas (or lists/maps of schemas) in draft-07.
_SCHEMA_VALUED = {"additionalProperties", "additionalItems", "contains", "propertyNames", "if", "then", "else", "not",
                  "items"}
_SCHEMA_LISTS = {"allOf", "anyOf", "oneOf"}
_SCHEMA_MAPS = {"properties", "patternProperties", "dependencies", "definitions"}
_NAME = re.compile(r"^[A-Z][A-Za-z0-9]{1,39}$")


class ContractError(Exception):
    """A contract or catalog that cannot be used; the message names the file."""


def reserved_keywords(schema: object, pointer: str = "") -> list[str]:
    """JSON Pointers of every `$`-keyword (and `definitions`) used as a schema keyword."""
    found: list[str] = []
    if isinstance(schema, bool):
        return found
    if not isinstance(schema, dict):
        return [f"{pointer or '/'} (not a schema object)"]
    for key, value in schema.items():
        here = f"{pointer}/{key}"
        if key.startswith("$") or key == "definitions":
            found.append(here)
            continue
        if key in _SCHEMA_VALUED:
            if key == "items" and isinstance(value, list):
                for index, item in enumerate(value):
                    found += reserved_keywords(item, f"{here}/{index}")
            else:
                found += reserved_keywords(value, here)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            for index, item in enumerate(value):
                found += reserved_keywords(item, f"{here}/{index}")
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            for name, item in value.items():
                if key == "dependencies" and isinstance(item, list):
                    continue
                found += reserved_keywords(item, f"{here}/{name}")
    return found


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Cardinality(_Strict):
    min: int = Field(ge=0, le=32)
    max: int = Field(ge=1, le=32)


class BindingSpec(_Strict):
    # cells: a map of named figures, each bound to one cell (resource, row, column) of an offered result.
    kind: Literal["resource", "evidence", "state", "action", "cells"]
    # Props (dotted paths, relative to the block's data) that name result columns.
    columns: tuple[str, ...] = ()
    sort: str | None = None
    page_size: str | None = None
    input: str | None = None  # action: the prop holding the typed input
    options: str | None = None  # state: the prop listing selectable values
    template: str | None = None  # cells: the text prop whose {name}s the figures fill
    # The first window the host sends with a committed revision (so the person's screen need not ask):
    # `first_rows` rows from the row the `offset` prop names (default 0); `page_size` overrides the count.
    first_rows: int = Field(default=0, ge=0, le=1000)
    offset: str | None = None


class RecipeField(_Strict):
    roles: tuple[Literal["dimension", "time", "measure", "attribute"], ...]
    types: tuple[Literal["string", "integer", "decimal", "float", "boolean", "date", "timestamp"], ...]
    many: bool = False
    optional: bool = False


class ComponentContract(_Strict):
    name: str
    revision: int = Field(ge=1)
    summary: str = Field(min_length=1, max_length=300)
    use_when: tuple[str, ...] = ()
    avoid_when: tuple[str, ...] = ()
    props: dict
    slots: dict[Literal["children"], Cardinality] = {}
    slot_labels: str | None = None
    bindings: dict[str, BindingSpec] = {}
    events: dict[str, str] = {}
    recipes: dict[str, dict[str, RecipeField]] = {}
    host_only: bool = False
    # Fixed presentation limits the renderer keeps to (e.g. max_categories of a chart); they reach the
    # renderer with every component as trusted props, never from a proposal.
    display: dict[Literal["max_categories"], int] = {}

    @model_validator(mode="after")
    def _coherent(self) -> ComponentContract:
        if not _NAME.match(self.name):
            raise ValueError(f"name {self.name!r} must be PascalCase")
        properties = self.props.get("properties", {})
        for prop in [*self.bindings, *filter(None, [self.slot_labels]),
                     *filter(None, (spec.template for spec in self.bindings.values()))]:
            if prop not in properties:
                raise ValueError(f"{prop!r} is not a prop")
        if any(not 2 <= value <= 100 for value in self.display.values()):
            raise ValueError("display limits are 2..100")
        top = properties.get("top", {})
        if "max_categories" in self.display and top.get("maximum", 0) > self.display["max_categories"]:
            raise ValueError("the top prop may not exceed display.max_categories")
        for port, prop in self.events.items():
            if self.bindings.get(prop, BindingSpec(kind="state")).kind != "action":
                raise ValueError(f"event port {port!r} must name an action binding prop")
        return self

    @property
    def display_props(self) -> dict:
        """The display limits as the renderer reads them (camelCase A2UI props)."""
        return {"maxCategories": self.display["max_categories"]} if "max_categories" in self.display else {}

    @property
    def contract_hash(self) -> str:
        return hashlib.sha256(canonical(self.model_dump(mode="json")).encode()).hexdigest()


class CatalogManifest(_Strict):
    """catalog.yaml: what the catalog is called, here and in A2UI."""

    catalog_id: str = Field(min_length=1)
    a2ui_catalog_id: str = Field(min_length=1)
    title: str = ""
    version: Literal[1] = 1


class Catalog:
    """A versioned set of contracts with compiled prop validators."""

    def __init__(self, catalog_id: str, a2ui_catalog_id: str, title: str, contracts: dict[str, ComponentContract]):
        self.catalog_id = catalog_id
        self.a2ui_catalog_id = a2ui_catalog_id
        self.title = title
        self.contracts = contracts
        # Compiled once: validating a block never re-reads or re-checks a schema.
        self.checks = {name: compile_check(c.props) for name, c in contracts.items()}
        self.contract_hashes = {name: c.contract_hash for name, c in contracts.items()}
        self.catalog_hash = hashlib.sha256(canonical(
            {"catalog_id": catalog_id, "contracts": {n: c.contract_hash for n, c in sorted(contracts.items())}}
        ).encode()).hexdigest()


def _load_contract(path: Path) -> ComponentContract:
    contract = strict_yaml.load_model(path, ComponentContract, ContractError, "component contract")
    schema = contract.props
    if schema.get("type") != "object":
        raise ContractError(f"{path}: props: the schema root must be {{type: object}}")
    reserved = reserved_keywords(schema)
    if reserved:
        raise ContractError(f"{path}: props{reserved[0]}: references and identifiers are not allowed in "
                            "component schemas (inline, synchronous draft-07 only)")
    try:
        jsonschema.Draft7Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "".join(f"/{p}" for p in exc.absolute_path)
        raise ContractError(f"{path}: props{where}: not a valid draft-07 schema: {exc.message}") from None
    return contract


def load_catalog(directory: Path = DEFAULT_CATALOG) -> Catalog:
    manifest = strict_yaml.load_model(directory / "catalog.yaml", CatalogManifest, ContractError, "catalog manifest")
    files = sorted((directory / "components").glob("*.yaml"))
    if not files:
        raise ContractError(f"{directory / 'components'}: no component contracts")
    if len(files) > MAX_COMPONENTS:
        raise ContractError(f"{directory}: {len(files)} components; a catalog holds at most {MAX_COMPONENTS}")
    contracts: dict[str, ComponentContract] = {}
    for path in files:
        contract = _load_contract(path)
        if contract.name in contracts:
            raise ContractError(f"{path}: a second contract named {contract.name!r}")
        contracts[contract.name] = contract
    return Catalog(manifest.catalog_id, manifest.a2ui_catalog_id, manifest.title, contracts)
