"""What the README's usage block trains and prints (the shared contract runs it)."""


def test_readme_usage_trains_three_rounds_and_counts_the_traffic(readme):
    history = readme.namespace["history"]
    assert len(history.records) == 3
    assert 0.0 <= history.accuracy[-1] <= 1.0
    # 3 rounds of FSL-SAGE: model traffic and smashed data were counted
    assert history.official_bytes[-1] > 3 * 2 * 3 * 4 * (64 * 32 + 32)
    acc, sent = readme.stdout.split()
    assert float(acc) == history.accuracy[-1]
    assert int(sent) == history.official_bytes[-1]
