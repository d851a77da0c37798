"""Checks a response against the OpenAPI schema the project serves, as schemathesis does."""

from __future__ import annotations

from typing import Any

import jsonschema
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

# Formats are checked, as schemathesis checks them: drf-spectacular documents a blank
# URLField as oneOf(uri, empty string), which holds only when "" fails the uri format.
# jsonschema checks "uri" only with an optional package; Django's validator stands in.
_FORMATS = jsonschema.FormatChecker()


@_FORMATS.checks("uri", raises=ValidationError)
def _is_uri(value: object) -> bool:
    if isinstance(value, str):
        URLValidator()(value)
    return True


def _json_schema(node: Any) -> Any:
    """OpenAPI 3.0's schema dialect as JSON Schema: `nullable: true` becomes a null branch."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: _json_schema(value) for key, value in node.items() if key != "nullable"}
    if node.get("nullable") is True:
        return {"anyOf": [converted, {"type": "null"}]}
    return converted


def response_errors(schema: dict, path: str, method: str, response: Any) -> list[str]:
    """What in `response` (a Django test response) the schema does not document: an
    undocumented status code, or each place the JSON body breaks the documented shape."""
    responses = schema["paths"][path][method]["responses"]
    documented = responses.get(str(response.status_code))
    if documented is None:
        return [f"status {response.status_code} not among {sorted(responses)}"]
    body_schema = documented.get("content", {}).get("application/json", {}).get("schema")
    if body_schema is None:
        return []
    root = {**_json_schema(body_schema), "components": _json_schema(schema["components"])}
    validator = jsonschema.Draft7Validator(root, format_checker=_FORMATS)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(response.json())]
