"""Key handling: public halves round-trip, files, and bad input of the key entry points."""

import pytest
from janus_secagg import ClientKeys, ClientPublicKey, ServerKeys, ServerPublicKeys


def test_public_halves_round_trip():
    b = ServerKeys.generate(box=True).public
    a = ServerKeys.generate().public
    assert ServerPublicKeys.from_bytes(b.to_bytes()) == b
    assert ServerPublicKeys.from_bytes(a.to_bytes()) == a
    client = ClientKeys.generate().public
    assert ClientPublicKey.from_bytes(client.to_bytes()) == client


def test_server_keys_save_and_load(tmp_path):
    keys = ServerKeys.generate(box=True)
    keys.save(tmp_path / "b.key")
    again = ServerKeys.load(tmp_path / "b.key")
    assert again.public == keys.public
    assert again.sign(b"m") == keys.sign(b"m")  # Ed25519 signatures are deterministic


def test_client_id_is_derived_from_key():
    keys = ClientKeys.generate()
    assert keys.client_id == ClientPublicKey.from_bytes(keys.public.to_bytes()).client_id
    assert keys.client_id != ClientKeys.generate().client_id


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda tmp: ServerPublicKeys(b"short"), ValueError, "sign"),
        (lambda tmp: ServerPublicKeys(bytes(32), b"x"), ValueError, "box"),
        (lambda tmp: ServerPublicKeys.from_bytes(bytes(10)), ValueError, "data"),
        (lambda tmp: ClientPublicKey.from_bytes(bytes(31)), ValueError, "data"),
        (lambda tmp: ClientKeys("seed"), TypeError, "signing"),
        (lambda tmp: ServerKeys(b"seed"), TypeError, "signing"),
        (lambda tmp: ServerKeys.load(_write(tmp, "00ff")), ValueError, "path.*not a janus"),
        # trial finding F12: every unreadable key file names `path`
        (
            lambda tmp: ServerKeys.load(_write(tmp, "janus-secagg key: a\n" + "zz" * 32)),
            ValueError,
            "path.*hex",
        ),
        (
            lambda tmp: ServerKeys.load(_write(tmp, "janus-secagg key: b\n" + "00" * 32)),
            ValueError,
            "path.*server B's keys",
        ),
        (lambda tmp: ServerKeys.load(_write_bytes(tmp, b"\xff\xfe")), ValueError, "path.*not a"),
        (lambda tmp: ServerKeys.load(tmp / "missing.key"), ValueError, "path.*cannot read"),
        (lambda tmp: ServerKeys.load(tmp), ValueError, "path.*cannot read"),
    ],
)
def test_keys_reject_bad_input(tmp_path, call, error, match):
    with pytest.raises(error, match=match):
        call(tmp_path)


def _write(folder, text):
    path = folder / "bad.key"
    path.write_text(text)
    path.chmod(0o600)
    return path


def _write_bytes(folder, data):
    path = folder / "bad.key"
    path.write_bytes(data)
    return path


def test_saved_key_file_is_private(tmp_path):
    # trial finding F6: the private key file used to be world-readable (0644)
    path = tmp_path / "a.key"
    path.write_text("old")
    path.chmod(0o644)
    ServerKeys.generate().save(path)
    assert path.stat().st_mode & 0o777 == 0o600
    ServerKeys.generate(box=True).save(tmp_path / "b.key")
    assert (tmp_path / "b.key").stat().st_mode & 0o777 == 0o600


def test_key_files_name_their_role_and_other_roles_are_refused(tmp_path):
    # trial finding (issue 16): operator, A and client key files were interchangeable hex
    ClientKeys.generate().save(tmp_path / "op.key", "operator")
    ClientKeys.generate().save(tmp_path / "c.key")
    ServerKeys.generate().save(tmp_path / "a.key")
    ServerKeys.generate(box=True).save(tmp_path / "b.key")
    assert (tmp_path / "a.key").read_text().startswith("janus-secagg key: a\n")
    for call, path, match in (
        (ClientKeys.load, "op.key", "holds the operator's signing key, not a client key"),
        (ClientKeys.load, "a.key", "holds server A's keys, not a client key"),
        (ServerKeys.load, "c.key", "holds a client key, not server A's keys or server B's"),
        (lambda p: ClientKeys.load(p, "operator", "--operator-key"), "b.key", "--operator-key"),
    ):
        with pytest.raises(ValueError, match=match):
            call(tmp_path / path)
    assert ServerKeys.load(tmp_path / "b.key").box is not None


def test_readable_key_files_warn_and_links_are_not_followed(tmp_path):
    path = tmp_path / "a.key"
    ServerKeys.generate().save(path)
    path.chmod(0o644)
    with pytest.warns(UserWarning, match="other users.*chmod 600"):
        ServerKeys.load(path)
    link = tmp_path / "link.key"
    link.symlink_to(tmp_path / "target.key")  # dangling: the target does not exist
    with pytest.raises(ValueError, match="symbolic link"):
        ServerKeys.generate().save(link)
    assert not (tmp_path / "target.key").exists()
