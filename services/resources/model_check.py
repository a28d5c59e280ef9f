"""python -m services.resources.model_check FILE [--warehouse URL]: a semantic model checked by the gateway's own
loader (and, given a warehouse, bound to its tables as at startup), then what a model would be shown of it.

`tessera semantic check` runs this as a process (the CLI never imports a service), so a file that passes here is
one the Resource Gateway starts with. Exit status 0: usable; 1: not, with one line naming the file and the key.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from services.resources.catalog import Catalog
from services.resources.warehouse import Warehouse, WarehouseUnavailable
from shared.config import WAREHOUSE_URL_VARIABLE
from shared.semantic.model import SemanticModel, SemanticModelError, load_semantic_model

CHECK_TIMEOUT_SECONDS = 30.0  # each zero-row probe of a mapped column, as the gateway's own statements are bounded


def model_view(model: SemanticModel) -> list[str]:
    """What a model is shown of `model`, as lines a person reads: entities with the fields it may use (and how) and
    the metrics; then what it never sees. Ids are left out: they are opaque and change with the catalog."""
    lines = [f"Dataset: {model.dataset.label}" + (f" — {model.dataset.description}" if model.dataset.description
                                                   else "")]
    hidden = []
    for name, entity in model.entities.items():
        lines.append(f"{entity.label}{_words(entity.synonyms)}" + (f": {entity.description}" if entity.description
                                                                     else ""))
        for field_name, spec in entity.fields.items():
            if spec.exposure == "never-to-model":
                hidden.append(f"{entity.label} · {spec.label} ({name}.{field_name}, {spec.sensitivity})")
                continue
            lines.append(f"  field   {spec.label} ({spec.type}, {spec.exposure}){_words(spec.synonyms)}")
        for spec in entity.metrics.values():
            lines.append(f"  metric  {spec.label} ({spec.type}){_words(spec.synonyms)}")
        for spec in (d for d in model.derived_metrics.values() if d.entity == name):
            lines.append(f"  metric  {spec.label} ({spec.type}, derived){_words(spec.synonyms)}")
    for rel in model.relationships.values():
        lines.append(f"Relationship: {rel.label} ({model.entities[rel.from_entity].label} → "
                     f"{model.entities[rel.to_entity].label}, {rel.kind.replace('_', ' ')})")
    lines.append("Never shown to the model:" if hidden else "Every field is shown to the model in some way.")
    lines += [f"  {item}" for item in hidden]
    return lines


def _words(synonyms: tuple[str, ...]) -> str:
    return f" [also: {', '.join(synonyms)}]" if synonyms else ""


def check(path: Path, warehouse_url: str | None) -> list[str]:
    """The report's lines; raises SemanticModelError or WarehouseUnavailable with one line saying what is wrong."""
    model = load_semantic_model(path)
    if warehouse_url:
        warehouse = Warehouse(warehouse_url, CHECK_TIMEOUT_SECONDS, connections=1)
        try:
            Catalog(model, warehouse.engine)  # every mapped table and column probed, metrics' fields resolved
        finally:
            warehouse.engine.dispose()
        bound = "every table and column it maps is in the warehouse"
    else:
        bound = f"tables and columns not checked (give --warehouse URL or ${WAREHOUSE_URL_VARIABLE} to check them)"
    fields = [f for e in model.entities.values() for f in e.fields.values()]
    shown = sum(1 for f in fields if f.exposure != "never-to-model")
    metrics = sum(len(e.metrics) for e in model.entities.values()) + len(model.derived_metrics)
    return [f"{path}: usable; {len(model.entities)} entities, {len(fields)} fields ({shown} shown to the model), "
            f"{metrics} metrics, {len(model.relationships)} relationships; {bound}.", "",
            "What a model is shown (besides opaque ids):", *(f"  {line}" for line in model_view(model))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tessera semantic check", description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--warehouse", metavar="URL", help="bind the model to this warehouse as the gateway would "
                                                           f"(default: ${WAREHOUSE_URL_VARIABLE}, when set)")
    args = parser.parse_args(argv)
    try:
        lines = check(args.file, args.warehouse or os.environ.get(WAREHOUSE_URL_VARIABLE))
    except SemanticModelError as exc:  # the loader names the file; a binding problem names the key only
        where = "" if str(exc).startswith(str(args.file)) else f"{args.file}: "
        print(f"tessera: error: semantic model {where}{exc}", file=sys.stderr)
        return 1
    except WarehouseUnavailable as exc:
        print(f"tessera: error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
