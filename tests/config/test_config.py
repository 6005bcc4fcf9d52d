import pytest

from mlguild.config import load_config, parse_duration, save_config
from mlguild.core.errors import ConfigError


def test_layers_defaults_yaml_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("search:\n  num_drafts: 5\nsandbox:\n  script_timeout_s: 60\n")
    cfg = load_config(path, ["search.num_drafts=7", "budget.time_s=90", "sandbox.memory_mb=null"])
    assert cfg.search.num_drafts == 7 and cfg.sandbox.script_timeout_s == 60 and cfg.budget.time_s == 90
    assert cfg.firewall.holdout_fraction == 0.2
    save_config(cfg, tmp_path / "saved.yaml")
    assert load_config(tmp_path / "saved.yaml") == cfg


@pytest.mark.parametrize(
    "override, message",
    [
        ("search.nope=1", "nope"),
        ("search.num_drafts=zero", "num_drafts"),
        ("firewall.holdout_fraction=1.5", "holdout_fraction"),
        ("no_equals_sign", "section.field=value"),
    ],
)
def test_bad_overrides_are_clear(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])


def test_durations():
    assert parse_duration("90s") == 90 and parse_duration("5m") == 300 and parse_duration("1.5h") == 5400
    for refused in ("soon", "42", "0s"):  # a bare number: seconds or minutes? (issue 25)
        with pytest.raises(ConfigError):
            parse_duration(refused)
