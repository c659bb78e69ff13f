"""Writes .cog/openapi_schema.json for a predictor, as `cog build` would, so that
coglet validates inputs (422) without Docker: python gen_schema.py predict.py:Predictor"""

import json
import os
import sys

from cog import _adt as adt
from cog import _inspector

module_path, name = sys.argv[1].split(":")
sys.path.insert(0, os.path.dirname(os.path.abspath(module_path)))
info = _inspector.create_predictor(os.path.splitext(os.path.basename(module_path))[0], name)

JSON = {
    adt.PrimitiveType.BOOL: {"type": "boolean"},
    adt.PrimitiveType.FLOAT: {"type": "number"},
    adt.PrimitiveType.INTEGER: {"type": "integer"},
    adt.PrimitiveType.STRING: {"type": "string"},
    adt.PrimitiveType.PATH: {"type": "string", "format": "uri"},
    adt.PrimitiveType.FILE: {"type": "string", "format": "uri"},
}

properties, required = {}, []
for field in sorted(info.inputs.values(), key=lambda f: f.order):
    schema = dict(JSON.get(field.type.primitive, {}))
    if field.type.repetition in (adt.Repetition.REPEATED, adt.Repetition.OPTIONAL_REPEATED):
        schema = {"type": "array", "items": schema}
    schema["title"] = field.name
    schema["x-order"] = field.order
    for key, value in (("minimum", field.ge), ("maximum", field.le), ("enum", field.choices),
                       ("description", field.description)):
        if value is not None:
            schema[key] = value
    if field.default is not None:
        schema["default"] = field.default
    elif field.type.repetition is adt.Repetition.REQUIRED:
        required.append(field.name)
    properties[field.name] = schema

document = {
    "openapi": "3.0.2",
    "info": {"title": "Cog", "version": "0.1.0"},
    "paths": {},
    "components": {"schemas": {
        "Input": {"type": "object", "title": "Input", "properties": properties, "required": required},
        "Output": {"title": "Output"},
    }},
}
os.makedirs(".cog", exist_ok=True)
with open(".cog/openapi_schema.json", "w") as f:
    json.dump(document, f, indent=2)
