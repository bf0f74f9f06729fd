import re
from pathlib import Path

import pytest

from sidecar import errors, protocol_types
from sidecar.protocol_types import ERROR_CODES


def _error_classes() -> list[type[errors.SidecarError]]:
    found: list[type[errors.SidecarError]] = []
    todo = [errors.SidecarError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo += cls.__subclasses__()
    return found


def test_every_application_error_of_the_protocol_has_its_class_and_code() -> None:
    by_kind = {cls.kind: cls.code for cls in _error_classes() if cls.kind in ERROR_CODES}
    jsonrpc_own = {"parse_error", "invalid_request", "method_not_found"}  # raised by the JSON-RPC layer
    assert by_kind == {kind: code for kind, code in ERROR_CODES.items() if kind not in jsonrpc_own}


def test_a_kind_the_protocol_does_not_list_fails_unless_it_sets_its_code() -> None:
    with pytest.raises(KeyError):
        type("Misspelt", (errors.SidecarError,), {"kind": "not_fuond"})
    own = type("Own", (errors.SidecarError,), {"kind": "adapter_only", "code": errors.SidecarError.code})
    assert own.code == ERROR_CODES["internal"]


def test_no_error_code_is_written_as_a_literal_in_the_sidecar() -> None:
    generated = Path(protocol_types.__file__).name
    literal = re.compile(r"-32\d{3}")
    offenders = [f"{path.name}:{n}" for path in Path(errors.__file__).parent.rglob("*.py") if path.name != generated
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if literal.search(line)]
    assert offenders == []
