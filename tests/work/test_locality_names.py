from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.work.domain.locality_names import (
    file_name_of_workunit,
    validate_locality_file_name,
    workunit_name,
    workunit_name_prefix,
)


@pytest.mark.parametrize(
    ("wu_name", "file_name"),
    [
        ("h1_0100.50__123_0", "h1_0100.50"),
        ("data__a__b", "data"),  # cut at the first double underscore
        ("a___x", "a"),
        ("_lead__x", "_lead"),
        ("plain_name", None),
        ("__starts_with_separator", None),
        ("", None),
    ],
)
def test_file_name_of_workunit_cuts_at_first_double_underscore(wu_name: str, file_name: str | None) -> None:
    assert file_name_of_workunit(wu_name) == file_name


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "must not be empty"),
        ("big__file", "contains '__'"),
        ("big_", "ends with '_'"),
        ("dir/file", "path separator"),
        ("dir\\file", "path separator"),
        ("..", "directory reference"),
        ("bad\nname", "control character"),
    ],
)
def test_invalid_locality_file_names_are_rejected(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        validate_locality_file_name(name)


def test_valid_locality_file_name_is_returned() -> None:
    assert validate_locality_file_name("h1_0100.50_S5R4") == "h1_0100.50_S5R4"


def test_workunit_name_builds_from_the_file_name() -> None:
    assert workunit_name_prefix("f1") == "f1__"
    assert workunit_name("f1", "17__x") == "f1__17__x"
    with pytest.raises(ValueError, match="contains '__'"):
        workunit_name("f__1", "x")
    with pytest.raises(ValueError, match="suffix"):
        workunit_name("f1", "")


@given(
    file_name=st.text(alphabet="abc_.-0", min_size=1, max_size=12),
    suffix=st.text(alphabet="xyz_0", min_size=1, max_size=12),
)
def test_valid_file_names_round_trip_through_workunit_names(file_name: str, suffix: str) -> None:
    try:
        validate_locality_file_name(file_name)
    except ValueError:
        return
    assert file_name_of_workunit(workunit_name(file_name, suffix)) == file_name
