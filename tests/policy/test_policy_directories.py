"""``--policies DIR`` where the directory also holds the CRD and sample manifests (issue 15,
item 3): documents that are not policies are skipped with a note; a broken policy is still an
error naming the file and the key; a directory without any policy is an error."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from webhook.cli.main import cli
from webhook.policy import PolicySet
from webhook.vocab.errors import PolicyError

EXAMPLE: t.Final = Path(__file__).resolve().parents[2] / "examples" / "trainer"
POLICY: t.Final = (EXAMPLE / "policy.yaml").read_text()
CRD: t.Final = (EXAMPLE / "crd.yaml").read_text()
SAMPLE: t.Final = (EXAMPLE / "trainer.yaml").read_text()


def _dir(tmp_path: Path, **files: str) -> Path:
    for name, text in files.items():
        (tmp_path / name.replace("_", ".")).write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    "files",
    [
        pytest.param(
            {"crd_yaml": CRD, "policy_yaml": POLICY, "trainer_yaml": SAMPLE}, id="the example directory"
        ),
        pytest.param(
            {"all_yaml": f"{CRD}\n---\n{POLICY}\n---\n{SAMPLE}"},
            id="one file with the CRD, the policy and a sample",
        ),
        pytest.param(
            {"policy_yaml": POLICY, "notes_yml": "just: a mapping\n", "empty_yaml": ""}, id="stray YAML"
        ),
    ],
)
def test_documents_that_are_not_policies_are_skipped(tmp_path: Path, files: dict[str, str]) -> None:
    policies = PolicySet.load([_dir(tmp_path, **files)], builtin=False)
    assert [p.name for p in policies.policies] == ["ml-example-trainer"]
    assert policies.notes and all("skipped" in note for note in policies.notes)


def test_validate_says_what_it_skipped_on_stderr(tmp_path: Path) -> None:
    directory = _dir(tmp_path, crd_yaml=CRD, policy_yaml=POLICY)
    result = CliRunner().invoke(
        cli, ["validate", "--policies", str(directory), str(EXAMPLE / "trainer.yaml")]
    )
    assert result.exit_code == 0, result.stderr
    assert (
        f"wasp: note: {directory / 'crd.yaml'}: document 0 (apiextensions.k8s.io/v1 CustomResourceDefinition)"
        in result.stderr
    )


@pytest.mark.parametrize(
    ("files", "message"),
    [
        pytest.param(
            {"crd_yaml": CRD, "policy_yaml": POLICY.replace("templateName:", "templateNme:")},
            r"policy\.yaml: spec\.root: unknown key 'templateNme'",
            id="a broken policy beside a CRD is an error naming the file and the key",
        ),
        pytest.param(
            {"crd_yaml": CRD, "policy_yaml": POLICY.replace("wasp.dev/v1alpha1", "wasp.dev/v1")},
            r"policy\.yaml: apiVersion",
            id="a policy of an unknown wasp.dev version is an error, not a skipped document",
        ),
        pytest.param(
            {"crd_yaml": CRD, "trainer_yaml": SAMPLE},
            r"holds no policy .*crd\.yaml: document 0 .*CustomResourceDefinition",
            id="a directory without a policy is an error that says what it holds",
        ),
        pytest.param(
            {"policy_yaml": POLICY, "broken_yaml": "a: [unclosed\n"},
            r"broken\.yaml: not valid YAML",
            id="a file that is not YAML is an error",
        ),
    ],
)
def test_policy_mistakes_in_a_directory_stay_load_errors(
    tmp_path: Path, files: dict[str, str], message: str
) -> None:
    with pytest.raises(PolicyError, match=message):
        PolicySet.load([_dir(tmp_path, **files)], builtin=False)


def test_an_empty_directory_loads_nothing(tmp_path: Path) -> None:
    """An empty ConfigMap mounted as the policy directory is a valid configuration."""
    assert PolicySet.load([tmp_path], builtin=False).policies == ()


def test_a_named_file_that_is_not_a_policy_is_still_an_error(tmp_path: Path) -> None:
    path = tmp_path / "crd.yaml"
    path.write_text(yaml.safe_dump(yaml.safe_load(CRD)))
    with pytest.raises(PolicyError, match=r"crd\.yaml: apiVersion"):
        PolicySet.load([path])
