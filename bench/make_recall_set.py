"""Builds bench/data/recall_set.json: labelled question -> evidence facts.

Two kinds of question, so that each retriever has a blind spot:
- paraphrases that share (almost) no words with their fact: vectors matter;
- questions about one of many look-alike orders, told apart only by an exact
  order number: full text matters.
Run once; the JSON is committed so the figures are reproducible.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

PARAPHRASES = [
    ("My dentist is Dr. Okafor on Linden Street", "Who takes care of my teeth?"),
    ("I prefer green tea over coffee in the morning", "What hot drink do I like when I wake up?"),
    ("My sister lives in Lisbon and designs buildings", "Where is my sibling based?"),
    ("The car must be inspected every March", "When is the vehicle check due?"),
    ("I am allergic to peanuts", "Which food makes me ill?"),
    (
        "My daughter plays the violin in the school orchestra",
        "What instrument does my kid practise?",
    ),
    ("We usually fly to Crete for summer holidays", "Where do we go on vacation in July?"),
    ("I cannot stand horror films", "What kind of movies should you never suggest?"),
    ("The wifi password is taped under the router", "How can a guest get online at home?"),
    (
        "My bank appointment about the mortgage is on Friday",
        "When do I meet someone about the house loan?",
    ),
    ("I jog along the river three mornings a week", "How do I keep fit?"),
    ("Our cat Miso needs her thyroid pills twice a day", "What medication does the pet take?"),
    ("My father's birthday is on the ninth of October", "When should I call dad to celebrate?"),
    ("I am learning Japanese with an app every evening", "Which language am I studying?"),
    (
        "The spare house key is with the neighbour at number 12",
        "Who can let me in if I am locked out?",
    ),
    ("I vote for keeping meetings under thirty minutes", "How long should calls with me last?"),
    ("My partner is vegetarian", "Does my spouse eat meat?"),
    ("The boiler was serviced last autumn", "When did the heating last get maintenance?"),
    ("I keep my passport in the blue folder in the desk", "Where are my travel documents?"),
    (
        "My son's football training is on Wednesday afternoons",
        "When does the boy kick a ball with his team?",
    ),
    ("I get migraines when I skip lunch", "What gives me headaches?"),
    ("Our wedding anniversary is the second of June", "When did we get married?"),
    ("I drive an old red Volvo estate", "What vehicle do I own?"),
    ("My favourite author is Ursula Le Guin", "Whose novels do I love reading?"),
    ("I pay the electricity bill by direct debit on the first", "How are the power costs settled?"),
    ("My grandmother lives in a care home in Leeds", "Where does granny stay these days?"),
    ("I want to run a half marathon next spring", "What sporting goal have I set myself?"),
    ("The plumber who fixed the sink was called Tomasz", "Who repaired the kitchen tap?"),
    ("I dislike being contacted before nine in the morning", "When is too early to message me?"),
    ("My laptop is a ThinkPad from work", "What computer do I use?"),
]

ITEMS = [
    "lamp",
    "drill",
    "bookshelf",
    "kettle",
    "rug",
    "printer",
    "bicycle pump",
    "desk chair",
    "toaster",
    "mirror",
    "tent",
    "blender",
]
PLACES = [
    "garage",
    "front porch",
    "neighbour",
    "office",
    "back door",
    "post office",
    "parcel locker",
    "kitchen",
]
TOPICS = [
    "The {x} club meets on Thursday evenings",
    "I bought new {x} gear last month",
    "There is a {x} course at the community centre",
    "A friend recommended a {x} podcast",
    "The library has books about {x}",
]
HOBBIES = [
    "chess",
    "pottery",
    "cycling",
    "gardening",
    "photography",
    "climbing",
    "baking",
    "birdwatching",
    "knitting",
    "sailing",
]


def build(seed: int = 7) -> dict[str, object]:
    rng = random.Random(seed)
    facts: list[str] = []
    questions: list[dict[str, object]] = []
    for fact, question in PARAPHRASES:
        facts.append(fact)
        questions.append({"q": question, "evidence": [len(facts) - 1], "type": "paraphrase"})
    # Look-alike records told apart only by an exact number or name: a
    # sentence embedding barely sees the digits, BM25 matches them exactly.
    numbers = rng.sample(range(10_000, 99_999), 120)
    for number in numbers:
        item, place = rng.choice(ITEMS), rng.choice(PLACES)
        facts.append(f"Order {number} for the {item} was delivered to the {place}")
    order_ids = list(range(len(PARAPHRASES), len(facts)))
    for i in rng.sample(order_ids, 30):
        number = facts[i].split()[1]
        questions.append(
            {"q": f"Where did parcel {number} end up?", "evidence": [i], "type": "exact"}
        )
    for topic in TOPICS:
        for hobby in HOBBIES:
            facts.append(topic.format(x=hobby))
    return {"facts": facts, "questions": questions}


if __name__ == "__main__":
    out = Path(__file__).parent / "data" / "recall_set.json"
    out.write_text(json.dumps(build(), indent=1) + "\n", encoding="utf-8")
    data = build()
    print(f"wrote {out}: {len(data['facts'])} facts, {len(data['questions'])} questions")
