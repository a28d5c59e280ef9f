"""The retail demo's catalog as the model sees it (tool shapes, readable fake ids), for planner unit tests."""

from __future__ import annotations

from services.resources.semantic_model import load_semantic_model
from shared.paths import REPO_ROOT


def retail_slice() -> list[dict]:
    model = load_semantic_model(REPO_ROOT / "deploy" / "semantic-models" / "retail.yaml")
    entities = []
    for name, spec in model.entities.items():
        metrics = [{"id": f"met_{name}.{m}", "label": s.label, "type": s.type, "synonyms": list(s.synonyms),
                    **({"better": "lower"} if s.better == "lower" else {})} for m, s in spec.metrics.items()]
        metrics += [{"id": f"met_{name}.{m}", "label": d.label, "type": d.type, "synonyms": list(d.synonyms),
                     **({"better": "lower"} if d.better == "lower" else {})}
                    for m, d in model.derived_metrics.items() if d.entity == name]
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
