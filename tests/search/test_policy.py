from mlguild.config import SearchConfig
from mlguild.search import GreedyPolicy, Node, SearchGraph


def _graph(*specs):
    g = SearchGraph("maximize")
    for i, (op, parents, status, score) in enumerate(specs):
        n = Node(id=f"n{i + 1:04d}", op=op, parents=tuple(parents), iteration=i, status=status, score=score)
        g.add(n)
    return g


def test_drafts_first_then_improve_best():
    policy = GreedyPolicy(SearchConfig(num_drafts=2, draft_every=0))
    assert policy.select(_graph(), 0).op == "draft"
    g = _graph(("draft", [], "scored", 0.6), ("draft", [], "scored", 0.8))
    action = policy.select(g, 2)
    assert action.op == "improve" and action.parents == ("n0002",)


def test_debug_capped_per_lineage():
    cfg = SearchConfig(num_drafts=1, draft_every=0, max_debug_depth=2, debug_probability=1.0)
    policy = GreedyPolicy(cfg)
    g = _graph(("draft", [], "scored", 0.6), ("improve", ["n0001"], "crash", None))
    assert policy.select(g, 2).op == "debug"
    g.add(Node(id="n0003", op="debug", parents=("n0002",), iteration=2, status="crash"))
    assert policy.select(g, 3).parents == ("n0003",)
    g.add(Node(id="n0004", op="debug", parents=("n0003",), iteration=3, status="timeout"))
    assert g["n0004"].debug_depth == 2
    assert policy.select(g, 4).op == "improve"  # the lineage has used its debug attempts


def test_periodic_fresh_draft_and_seeded_choices():
    cfg = SearchConfig(num_drafts=1, draft_every=3, debug_probability=0.5, seed=1)
    g = _graph(
        ("draft", [], "scored", 0.6), ("improve", ["n0001"], "scored", 0.7), ("improve", ["n0002"], "crash", None)
    )
    assert GreedyPolicy(cfg).select(g, 6).op == "draft"  # iteration 6 is a periodic draft; seed 1 does not debug
    picks = [GreedyPolicy(cfg).select(g, i) for i in range(10)]
    assert picks == [GreedyPolicy(cfg).select(g, i) for i in range(10)]


def test_nothing_scored_and_nothing_debuggable_means_draft():
    cfg = SearchConfig(num_drafts=1, draft_every=0, max_debug_depth=0)
    g = _graph(("draft", [], "crash", None))
    assert GreedyPolicy(cfg).select(g, 1).op == "draft"


def test_best_uses_direction():
    g = SearchGraph("minimize")
    for i, s in enumerate([3.0, 1.0, 2.0]):
        g.add(Node(id=f"n{i}", op="draft", parents=(), iteration=i, status="scored", score=s))
    assert g.best().id == "n1"
