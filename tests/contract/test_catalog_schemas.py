"""The browser's zod prop schemas say what the catalog's contracts say.

They are generated at build time (services/web/frontend/tools/catalog_schemas.py); this reads the generated
module in Node, as the renderer does, and compares every component, every prop and its required-ness with
the catalog in its stream form (shared.ui.a2ui.catalog_document), and checks that the A2UI binder resolves
every data binding and child list of it (but those inside FigureText's map of figures: the binder does not
descend into maps, so that element follows its results itself).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess

import pytest

from shared.paths import REPO_ROOT
from shared.ui.a2ui import catalog_document
from shared.ui.contracts import load_catalog

FRONTEND = REPO_ROOT / "services" / "web" / "frontend"
GENERATED = FRONTEND / "src" / "generated" / "catalog-schemas.js"

# Each component's props as the renderer sees them: optional or not, and what the binder does with each.
DESCRIBE = """
const { componentSchemas } = await import(process.env.SCHEMAS_URL);
const { scrapeSchemaBehavior } = await import('@a2ui/web_core/v0_9');
const described = {};
for (const [name, schema] of Object.entries(componentSchemas)) {
  const behaviour = scrapeSchemaBehavior(schema).shape;
  described[name] = Object.fromEntries(Object.entries(schema.shape).map(([prop, field]) => [prop,
    { optional: field.isOptional(), binder: behaviour[prop].type }]));
}
console.log(JSON.stringify(described));
"""


def _generator():
    spec = importlib.util.spec_from_file_location("catalog_schemas", FRONTEND / "tools" / "catalog_schemas.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def described() -> dict:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the generated schemas are read in Node.js")
    assert (REPO_ROOT / "node_modules" / "zod").exists(), "run 'make setup' (npm ci)"
    assert _generator().main(["catalog_schemas.py", str(GENERATED)]) == 0  # what the build writes, written the same
    result = subprocess.run([node, "--input-type=module", "-e", DESCRIBE], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=60, env={**os.environ, "SCHEMAS_URL": GENERATED.as_uri()})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_every_component_and_prop_is_there_with_its_required_ness(described):
    document = catalog_document(load_catalog())
    assert set(described) == set(document["components"])
    for name, schema in document["components"].items():
        wire_props = set(schema["properties"]) - {"id", "component"}  # the renderer takes the envelope off first
        assert set(described[name]) == wire_props, name
        required = set(schema["required"]) - {"id", "component"}
        assert {p for p, d in described[name].items() if not d["optional"]} == required, name


def test_the_binder_resolves_every_binding_and_child_list(described):
    catalog = load_catalog()
    for name, contract in catalog.contracts.items():
        bound = {prop for prop, spec in contract.bindings.items() if spec.kind in ("resource", "evidence", "state")}
        for prop in bound:
            assert described[name][prop]["binder"] == "DYNAMIC", (name, prop)
        if "children" in contract.slots:
            assert described[name]["children"]["binder"] == "STRUCTURAL", name
        literal = set(contract.props.get("properties", {})) - bound - {"figures"}
        assert all(described[name][prop]["binder"] != "DYNAMIC" for prop in literal), name


def test_a_keyword_the_conversion_does_not_know_stops_the_build():
    generator = _generator()
    with pytest.raises(ValueError, match="'format'"):
        generator.to_zod({"type": "string", "format": "date"})
    with pytest.raises(ValueError, match="only A2UI common types"):
        generator.to_zod({"$ref": "#/definitions/elsewhere"})


@pytest.mark.parametrize(("schema", "says"), [
    ({"$ref": "https://a2ui.org/specification/v0_9/common_types.json#/$defs/ChildList", "maxItems": 2}, "next to"),
    ({"enum": ["a", "b"], "maxLength": 1}, "next to"),
    ({"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 3}]}, "tells the options apart"),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "maxProperties": 1}, "map keywords"),
    ({"type": "object", "additionalProperties": {"type": "string"}, "propertyNames": {"format": "email"}},
     "'format'"),
])
def test_known_keywords_in_shapes_the_conversion_would_drop_stop_the_build(schema, says):
    with pytest.raises(ValueError, match=says):
        _generator().to_zod(schema)


def test_a_one_of_told_apart_by_a_const_prop_is_converted():
    option = {"type": "object", "required": ["recipe"], "properties": {"recipe": {"const": "bar"}}}
    other = {"type": "object", "required": ["recipe"], "properties": {"recipe": {"const": "line"}}}
    assert _generator().to_zod({"oneOf": [option, other]}).startswith("z.union([")
