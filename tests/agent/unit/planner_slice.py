"""The retail demo's catalog as the model sees it (tool shapes, readable fake ids), for planner unit tests."""

from __future__ import annotations

from shared.paths import REPO_ROOT
from shared.semantic.model import load_semantic_model


def retail_slice() -> list[dict]:
    model = load_semantic_model(REPO_ROOT / "deploy" / "semantic-models" / "retail.yaml")
    entities = []
    for name, spec in model.entities.items():
        metrics = [_metric(f"met_{name}.{m}", s) for m, s in spec.metrics.items()]
        metrics += [_metric(f"met_{name}.{m}", d) for m, d in model.derived_metrics.items() if d.entity == name]
        entities.append({
            "id": f"ent_{name}", "label": spec.label, "description": spec.description,
            "synonyms": list(spec.synonyms),
            "fields": [{"id": f"fld_{name}.{f}", "label": s.label, "type": s.type, "exposure": s.exposure,
                        "synonyms": list(s.synonyms), **({"event_verbs": list(s.event_verbs)} if getattr(
                            s, "event_verbs", None) else {})} for f, s in spec.fields.items()
                       if s.exposure != "never-to-model"],
            "metrics": metrics,
            "relationships": [{"id": f"rel_{r}", "label": s.label, "kind": s.kind, "from": f"ent_{s.from_entity}",
                               "to": f"ent_{s.to_entity}"} for r, s in model.relationships.items()
                              if name in (s.from_entity, s.to_entity)],
        })
    return entities


def match(value: str, entity: str, field: str) -> dict:
    return {"field_id": f"fld_{entity}.{field}", "entity_id": f"ent_{entity}", "untrusted_value": value}


def _metric(metric_id: str, spec) -> dict:
    """A metric as the catalog shows it to the model ("better" only where lower is better)."""
    return {"id": metric_id, "label": spec.label, "type": spec.type, "synonyms": list(spec.synonyms),
            **({"better": "lower"} if spec.better == "lower" else {})}
