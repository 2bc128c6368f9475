import pytest

from icml25_core import missing_extra_message, requires_extra


def test_requires_extra_names_install_command_when_import_fails():
    with (
        pytest.raises(ImportError, match=r"pip install 'fedswa\[flower\]'") as info,
        requires_extra("fedswa", "flower"),
    ):
        import icml25_no_such_module  # noqa: F401
    assert info.value.name == "icml25_no_such_module"
    assert "'icml25_no_such_module' is not installed" in str(info.value)
    assert isinstance(info.value.__cause__, ModuleNotFoundError)


def test_requires_extra_passes_when_imports_succeed():
    with requires_extra("fedswa", "flower"):
        import json
    assert json.dumps(1) == "1"


def test_requires_extra_leaves_other_errors_alone():
    with pytest.raises(ZeroDivisionError), requires_extra("fedswa", "flower"):
        1 / 0  # noqa: B018


def test_missing_extra_message_without_module():
    assert missing_extra_message("quest-qat", "triton") == (
        "this part of quest-qat needs its optional extra [triton]; "
        "install it with: pip install 'quest-qat[triton]'"
    )


@pytest.mark.parametrize(
    ("dist", "extra", "error", "match"),
    [
        ("", "flower", ValueError, "dist"),
        ("fedswa", "a b", ValueError, "extra"),
        (None, "x", TypeError, "dist"),
        ("x", 3, TypeError, "extra"),
    ],
)
def test_requires_extra_rejects_bad_names(dist, extra, error, match):
    with pytest.raises(error, match=match), requires_extra(dist, extra):
        pass


def test_requires_extra_reraises_import_error_of_installed_module():
    with (
        pytest.raises(ImportError, match="cannot import name") as info,
        requires_extra("fedswa", "flower"),
    ):
        from json import no_such_name  # noqa: F401
    assert "pip install" not in str(info.value)
