"""Multi-session retrieval benchmark data with known evidence, in English and Chinese.

English is generated: a user's facts spread over dated sessions among distractor chat,
some facts updated later, questions of four types (``single``, ``multi``, ``temporal``,
``update``) whose evidence is the message(s) that state the fact. Questions are worded
the way people ask, usually *not* with the words of the evidence.

Chinese is built from KdConv (travel, test split), read from
``shared/data/zh/kdconv_travel_test.json`` (never copied into the repository): each
dialogue is a session with a date; an utterance's ``attrs`` are the ground truth, so a
question about entity ``name``'s ``attrname`` has as evidence the utterances carrying that
attribute. Types: ``single``, ``multi`` (two entities, two evidence groups) and
``temporal`` (the entity is not named, only the day it was discussed).

Everything is deterministic for a seed. Evidence is a list of groups; a group is found
when any of its messages is retrieved (the same fact said in several sessions).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KDCONV = ROOT.parent / "shared" / "data" / "zh" / "kdconv_travel_test.json"


@dataclass
class Turn:
    role: str
    text: str
    key: str | None = None  # evidence key when this turn carries a fact


@dataclass
class BenchSession:
    name: str
    day: datetime
    turns: list[Turn] = field(default_factory=list)
    user: str = "u1"


@dataclass
class Question:
    qtype: str
    text: str
    groups: list[list[tuple[str, int]]]  # groups of (session name, turn index)
    now: datetime
    user: str = "u1"


@dataclass
class Dataset:
    language: str
    sessions: list[BenchSession]
    questions: list[Question]


# -- English ---------------------------------------------------------------------------------

_NAMES = ["Biscuit", "Mochi", "Pepper", "Luna", "Otis", "Juniper", "Waffles", "Ziggy"]
_CITIES = ["Denver", "Austin", "Portland", "Chicago", "Seattle", "Boston", "Atlanta", "Phoenix"]
_CONF = ["Lisbon", "Toronto", "Singapore", "Berlin", "Nairobi", "Osaka", "Dublin", "Lima"]
_JOBS = [("data engineer", "Northwind"), ("product designer", "Globex"),
         ("nurse practitioner", "St. Mary's"), ("high school teacher", "Lincoln High"),
         ("backend developer", "Initech"), ("architect", "Stone & Vale")]

# (key, statement, question, paraphrase of the answer) — statements and questions share
# few words on purpose.
_FACTS = [
    ("pet", "By the way, we finally adopted a beagle puppy last week and called him {pet}!",
     "What's my dog's name?"),
    ("sister", "My older sister Priya just got engaged, the wedding is planned for spring.",
     "Who in my family is getting married?"),
    ("allergy", "Heads up: I'm allergic to shellfish, so no shrimp or crab in any recipe.",
     "Is there any food I must avoid?"),
    ("car", "I traded in the old sedan for a used Subaru Outback, mostly for ski trips.",
     "What vehicle do I drive these days?"),
    ("instrument", "I've been taking cello lessons on Thursday evenings since January.",
     "Which musical instrument am I learning?"),
    ("marathon", "I signed up for the Chicago marathon in October, my first full one.",
     "What race am I training for?"),
    ("book", "Currently reading Piranesi by Susanna Clarke, about halfway through it.",
     "Which novel was I in the middle of?"),
    ("coffee", "I switched to oat milk flat whites, dairy upsets my stomach lately.",
     "How do I take my coffee?"),
    ("garden", "The tomatoes on my balcony finally ripened, I grew three varieties.",
     "What vegetables have I been growing at home?"),
    ("language", "I started learning Portuguese on Duolingo before the Brazil trip.",
     "Which language am I studying?"),
    ("birthday", "My birthday is on the 14th of August, I usually take the day off.",
     "When is my birthday?"),
    ("kid", "Our son Leo starts kindergarten in September, he's excited and nervous.",
     "How old is my child roughly, and what's his name?"),
    ("plant", "My monstera finally put out a new leaf, I water it every Sunday morning.",
     "How often do I water my houseplant?"),
    ("gym", "I cancelled the gym membership and now do yoga at home with an app.",
     "How do I exercise these days?"),
    ("phone", "Dropped my phone in the lake, so I'm using my partner's old Pixel for now.",
     "What happened to my mobile?"),
    ("spouse", "Our tenth wedding anniversary is coming up and I want to surprise Dana.",
     "What's my wife's name?"),
    ("diet", "I've been vegetarian for about two years now, mostly for the climate.",
     "Do I eat meat?"),
    ("movie", "We watched Dune Part Two last night, the sound design was incredible.",
     "What film did I see recently?"),
    ("grandma", "My grandmother turns ninety next month, we're planning a party in Ohio.",
     "Whose big birthday is coming up in my family?"),
    ("podcast", "On my commute I've been listening to Hardcore History, the WWI series.",
     "What do I listen to on the way to work?"),
]

# The same facts asked with some of the statement's words.
_LEXICAL = {
    'pet': 'What did I call the beagle puppy we adopted?',
    'sister': "When is my sister Priya's wedding planned?",
    'allergy': 'What am I allergic to?',
    'car': 'Which Subaru did I get when I traded in the sedan?',
    'instrument': 'When are my cello lessons?',
    'marathon': 'Which marathon did I sign up for?',
    'book': 'What was I currently reading?',
    'coffee': 'What milk do I have in my flat white?',
    'garden': 'How many tomato varieties did I grow on the balcony?',
    'language': 'Which app am I using to learn Portuguese?',
    'birthday': 'What day is my birthday?',
    'kid': 'When does our son start kindergarten?',
    'plant': 'How often do I water the monstera?',
    'gym': 'What did I switch to after cancelling the gym membership?',
    'phone': 'Whose old Pixel am I using after my phone fell in the lake?',
    'spouse': 'Which wedding anniversary is coming up?',
    'diet': 'How long have I been vegetarian?',
    'movie': 'What did I think of Dune Part Two?',
    'grandma': "Where is my grandmother's ninetieth birthday party?",
    'podcast': 'Which podcast series do I listen to on my commute?',
}

_DISTRACT_USER = [
    "Can you suggest a quick weeknight dinner with {food}?",
    "What's the difference between a {a} and a {b}?",
    "How do I fix a merge conflict in git when both branches changed {thing}?",
    "Any tips for sleeping better when it's hot outside?",
    "Recommend a podcast about {topic}.",
    "My friend's {animal} keeps barking at night, any advice I can pass on?",
    "Explain {topic} like I'm twelve.",
    "What should I pack for a weekend in {city}?",
    "Is it worth buying a {gadget} this year?",
    "Write a short toast for a colleague's retirement party.",
    "How long should I boil {food} for?",
    "Summarize the plot of a famous {genre} movie without spoilers.",
    "What's a good stretching routine after running?",
    "Help me write an email asking my landlord about the {thing}.",
]
_FILL = {
    "food": ["chickpeas", "salmon", "tofu", "pasta", "eggs", "lentils", "rice", "broccoli"],
    "a": ["latte", "violin", "crocodile", "hurricane", "virus", "stock"],
    "b": ["cappuccino", "viola", "alligator", "typhoon", "bacteria", "bond"],
    "thing": ["the config file", "the heating", "the README", "the parking spot", "a test"],
    "topic": ["black holes", "inflation", "the French revolution", "machine learning",
              "photosynthesis", "jazz history", "marathon training", "car maintenance"],
    "animal": ["dog", "terrier", "husky", "parrot", "cat"],
    "city": _CITIES + _CONF,
    "gadget": ["e-reader", "smartwatch", "robot vacuum", "standing desk", "drone"],
    "genre": ["sci-fi", "western", "heist", "musical", "horror"],
}
_DISTRACT_ASSISTANT = [
    "Sure! Here's a simple idea: {x}. Let me know if you want variations.",
    "Good question. In short, {x}. Happy to go deeper.",
    "Here are a few suggestions: {x}. Hope that helps!",
    "The main points are: {x}. Want me to expand on any of them?",
]
_ASSIST_BITS = ["keep it simple and seasonal", "check the settings first", "try it for a week",
                "compare a couple of options", "it depends on your budget",
                "start slow and build up", "read the reviews carefully",
                "marathon runners often swear by it", "a family member might help",
                "dogs and cats can both adapt", "most cars need this every year"]


def _noon(day: datetime) -> datetime:
    return day.replace(hour=12, minute=0)


def _fill(rng: random.Random, template: str, **extra: str) -> str:
    values = {k: rng.choice(v) for k, v in _FILL.items()}
    values.update(extra)
    return template.format(**values)


def english(seeds: tuple[int, ...] = (7, 8, 9), sessions: int = 40) -> Dataset:
    """The English benchmark: one user per seed, each with ``sessions`` dated sessions."""
    all_sessions: list[BenchSession] = []
    all_questions: list[Question] = []
    for seed in seeds:
        one = _english_user(seed, sessions, f"user{seed}")
        all_sessions.extend(one.sessions)
        all_questions.extend(one.questions)
    return Dataset("en", all_sessions, all_questions)


def _english_user(seed: int, sessions: int, user: str) -> Dataset:
    rng = random.Random(seed)
    first = datetime(2026, 1, 5, 18, 0, tzinfo=UTC)
    days = sorted(rng.sample(range(300), sessions))
    out = [BenchSession(f"en{seed}-{i:02d}", first + timedelta(days=d, hours=rng.randint(0, 4)),
                        user=user) for i, d in enumerate(days)]
    for session in out:
        for _ in range(rng.randint(15, 30)):
            session.turns.append(Turn("user", _fill(rng, rng.choice(_DISTRACT_USER))))
            session.turns.append(Turn("assistant", _fill(
                rng, rng.choice(_DISTRACT_ASSISTANT),
                x="; ".join(rng.sample(_ASSIST_BITS, 2)))))
    questions: list[Question] = []
    end = out[-1].day + timedelta(days=1)

    counter = iter(range(1_000_000))

    def place(session: BenchSession, text: str, key: str) -> tuple[str, int]:
        at = rng.randrange(0, len(session.turns) // 2) * 2
        unique = f"{key}#{next(counter)}"
        session.turns[at:at] = [Turn("user", text, unique),
                                Turn("assistant", "Thanks for telling me, I'll keep that in mind.")]
        return (unique, -1)  # resolved to (session, index) once every fact is placed

    # single facts, each stated once in a random session
    for key, statement, question in _FACTS:
        where = place(rng.choice(out), statement.format(pet=rng.choice(_NAMES)), key)
        questions.append(Question("single", question, [[where]], end))
        questions.append(Question("single", _LEXICAL[key], [[where]], end))
    # a job and a home that change later (update): the newest statement is the evidence
    job_sessions = sorted(rng.sample(range(sessions), 2))
    jobs = rng.sample(_JOBS, 2)
    home_sessions = sorted(rng.sample(range(sessions), 3))
    homes = rng.sample(_CITIES, 3)
    job_where = [place(out[i], f"Big news: I accepted an offer as a {j} at {c}, starting "
                 "Monday.", "job") for i, (j, c) in zip(job_sessions, jobs, strict=True)]
    home_where = [place(out[i], f"We signed the lease, so we're officially moving to {h} "
                  "next month.", "home") for i, h in zip(home_sessions, homes, strict=True)]
    questions.append(Question("update", "Where do I work now?", [[job_where[-1]]], end))
    questions.append(Question("update", "Which offer did I accept most recently?",
                              [[job_where[-1]]], end))
    questions.append(Question("update", "Where did we sign the newest lease?",
                              [[home_where[-1]]], end))
    questions.append(Question("update", "What's my current job title?", [[job_where[-1]]], end))
    questions.append(Question("update", "Which city do I live in at the moment?",
                              [[home_where[-1]]], end))
    questions.append(Question("multi", "List every city I've lived in or moved to.",
                              [[w] for w in home_where], end))
    questions.append(Question("multi", "What jobs have I had so far?",
                              [[w] for w in job_where], end))
    # conference trips across sessions (multi) and on given days (temporal)
    trip_sessions = sorted(rng.sample(range(sessions), 5))
    trips = []
    for i, city in zip(trip_sessions, rng.sample(_CONF, 5), strict=True):
        text = f"I'll be in {city} for a work conference, any vegetarian food tips there?"
        trips.append((out[i], place(out[i], text, "trip")))
    questions.append(Question("multi", "Which cities did I travel to for work events?",
                              [[w] for _, w in trips], end))
    for session, where in trips:
        day = session.day
        questions.append(Question(
            "temporal", f"Where was I going for work when we talked on {day:%B} {day.day}?",
            [[where]], end))
        questions.append(Question(
            "temporal", "Which trip did I mention yesterday?", [[where]],
            _noon(day + timedelta(days=1))))
        questions.append(Question(
            "temporal", "Which conference was I going to, as I said yesterday?", [[where]],
            _noon(day + timedelta(days=1))))
    # restaurants mentioned on several days: which one on a given day (temporal)
    rest_sessions = sorted(rng.sample(range(sessions), 6))
    places = ["Osteria Lupa", "Golden Lotus", "Taqueria El Sol", "Blue Fin Sushi",
              "Bistro Margaux", "Spice Route"]
    for i, place_name in zip(rest_sessions, places, strict=True):
        where = place(out[i], f"We had dinner at {place_name} tonight and it was fantastic.",
                      "restaurant")
        day = out[i].day
        questions.append(Question("temporal",
                                  f"What restaurant did I go to on {day:%B} {day.day}?",
                                  [[where]], end))
        questions.append(Question("temporal",
                                  f"Where did we have dinner on {day:%B} {day.day}?",
                                  [[where]], end))
        week_later = _noon(day + timedelta(days=7 - day.weekday() + 2))  # next Wednesday
        questions.append(Question("temporal", "Where did I eat out last week?", [[where]],
                                  week_later))
    # multi-session about facts stated in two sessions
    hobby = rng.sample(range(sessions), 2)
    w1 = place(out[hobby[0]], "Went bouldering at the climbing gym after work, my forearms "
               "are dead.", "hobby")
    w2 = place(out[hobby[1]], "Signed up for a pottery class on Saturdays, made a wonky bowl.",
               "hobby")
    questions.append(Question("multi", "What hobbies have I picked up recently?",
                              [[w1], [w2]], end))
    for question in questions:
        question.user = user
    return Dataset("en", out, _resolve(out, questions))


def _resolve(sessions: list[BenchSession], questions: list[Question]) -> list[Question]:
    """Replace evidence keys by ``(session, turn index)`` (later inserts shift indices)."""
    where = {t.key: (s.name, i) for s in sessions for i, t in enumerate(s.turns) if t.key}
    for question in questions:
        question.groups = [[where[key] for key, _ in group] for group in question.groups]
    return questions


# -- Chinese (KdConv) -------------------------------------------------------------------------

_ZH_TEMPLATES = {
    "地址": ["{n}在什么位置？", "{n}的地址是哪里？", "去{n}的话具体地址是？"],
    "门票": ["{n}门票多少钱？", "去{n}要买票吗，票价多少？", "{n}的票价是多少？"],
    "开放时间": ["{n}几点开门？", "{n}的开放时间是什么时候？", "{n}什么时间可以进去？"],
    "建议游玩时间": ["{n}大概要玩多久？", "逛{n}需要多长时间？", "{n}建议游玩多久？"],
    "电话": ["{n}的联系电话是多少？", "怎么打电话联系{n}？"],
    "周边景点": ["{n}附近有什么好玩的？", "{n}周边还有哪些景点？"],
}
_ZH_ASK = {"地址": "地址", "门票": "门票价格", "开放时间": "开放时间", "建议游玩时间": "游玩时长",
           "电话": "电话", "周边景点": "周边景点"}


def chinese(path: Path = KDCONV, seed: int = 11, *, single: int = 150, multi: int = 60,
            temporal: int = 90) -> Dataset:
    """The Chinese benchmark from KdConv travel dialogues (one dialogue = one session)."""
    rng = random.Random(seed)
    dialogues = json.loads(path.read_text(encoding="utf-8"))
    first = datetime(2026, 1, 3, 19, 0, tzinfo=UTC)
    sessions: list[BenchSession] = []
    carriers: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for i, dialogue in enumerate(dialogues):
        session = BenchSession(f"zh-{i:03d}", first + timedelta(days=2 * i))
        for j, utt in enumerate(dialogue["messages"]):
            session.turns.append(Turn("user" if j % 2 == 0 else "assistant", utt["message"]))
            for attr in utt.get("attrs", []):
                if attr["attrname"] in _ZH_TEMPLATES:
                    carriers.setdefault((attr["name"], attr["attrname"]), []).append(
                        (session.name, j))
        sessions.append(session)
    end = sessions[-1].day + timedelta(days=1)
    keys = sorted(carriers)
    rng.shuffle(keys)
    questions: list[Question] = []
    for name, attr in keys[:single]:
        text = rng.choice(_ZH_TEMPLATES[attr]).format(n=name)
        questions.append(Question("single", text, [carriers[(name, attr)]], end))
    by_attr: dict[str, list[str]] = {}
    for name, attr in keys:
        by_attr.setdefault(attr, []).append(name)
    attrs = [a for a in sorted(by_attr) if len(by_attr[a]) >= 2]
    for _ in range(multi):
        attr = rng.choice(attrs)
        a, b = rng.sample(by_attr[attr], 2)
        text = f"{a}和{b}的{_ZH_ASK[attr]}分别是什么？"
        questions.append(Question("multi", text, [carriers[(a, attr)], carriers[(b, attr)]],
                                  end))
    # temporal: the entity is not named, the day is; evidence = the carriers that day
    day_of = {s.name: s.day for s in sessions}
    dated = [(k, w) for k in keys for w in carriers[k]]
    rng.shuffle(dated)
    seen: set[tuple[str, str]] = set()
    count = 0
    for (_name, attr), (sname, _) in dated:
        if count >= temporal or (sname, attr) in seen:
            continue
        seen.add((sname, attr))
        same_day = [w for (n, a), ws in carriers.items() if a == attr
                    for w in ws if w[0] == sname]
        day = day_of[sname]
        kind = count % 3
        if kind == 0:
            text = f"{day.month}月{day.day}日聊到的那个景点，{_ZH_ASK[attr]}是什么？"
            now = end
        elif kind == 1:
            text = f"昨天说的那个地方，{_ZH_ASK[attr]}是什么来着？"
            now = _noon(day + timedelta(days=1))
        else:
            text = f"上周{'一二三四五六日'[day.weekday()]}我们聊的景点，{_ZH_ASK[attr]}是什么？"
            now = _noon(day + timedelta(days=7 - day.weekday() + 1))  # next Tuesday
        questions.append(Question("temporal", text, [same_day], now))
        count += 1
    return Dataset("zh", sessions, questions)


def latency_corpus(n: int = 10_000, seed: int = 3) -> list[Turn]:
    """``n`` mixed English and Chinese turns for one long session (latency runs)."""
    rng = random.Random(seed)
    zh = json.loads(KDCONV.read_text(encoding="utf-8")) if KDCONV.exists() else []
    utterances = [u["message"] for d in zh for u in d["messages"]]
    turns: list[Turn] = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        if utterances and rng.random() < 0.4:
            turns.append(Turn(role, rng.choice(utterances)))
        elif role == "user":
            turns.append(Turn(role, _fill(rng, rng.choice(_DISTRACT_USER))))
        else:
            turns.append(Turn(role, _fill(rng, rng.choice(_DISTRACT_ASSISTANT),
                                          x="; ".join(rng.sample(_ASSIST_BITS, 2)))))
    return turns


# -- LoCoMo ---------------------------------------------------------------------------------

LOCOMO = ROOT.parent / "shared" / "data" / "locomo"
_LOCOMO_DATES = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y")


def _locomo_day(text: str) -> datetime:
    for fmt in _LOCOMO_DATES:
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"LoCoMo session date {text!r} is not like '1:56 pm on 8 May, 2023'")


def locomo(paths: list[Path] | None = None) -> Dataset:
    """LoCoMo conversations (read from ``shared/data/locomo``): one user per conversation.

    Each session is a dated session of that user; each answerable question (categories
    1-4) has one evidence group per evidence turn, and its type is the conversation's
    name, so a tuning conversation and held-out ones are reported apart. Questions are
    asked a day after the conversation's last session.
    """
    sessions: list[BenchSession] = []
    questions: list[Question] = []
    for path in paths or sorted(LOCOMO.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        where: dict[str, tuple[str, int]] = {}
        numbers = sorted(int(k.split("_")[1]) for k in data
                         if k.startswith("session_") and k.count("_") == 1 and data[k])
        for n in numbers:
            session = BenchSession(f"{path.stem}-s{n}",
                                   _locomo_day(data[f"session_{n}_date_time"]), user=path.stem)
            for i, t in enumerate(data[f"session_{n}"]):
                text = str(t.get("text", ""))
                if t.get("blip_caption"):
                    text = f"{text} [shares a photo: {t['blip_caption']}]"
                role = "user" if t["speaker"] == data["speaker_a"] else "assistant"
                session.turns.append(Turn(role, text))
                where[str(t["dia_id"])] = (session.name, i)
            sessions.append(session)
        end = max(s.day for s in sessions if s.user == path.stem) + timedelta(days=1)
        for qa in data.get("qa", []):
            ids = [e for item in qa.get("evidence", [])
                   for e in str(item).replace(";", " ").split()]
            groups = [[where[e]] for e in dict.fromkeys(ids) if e in where]
            if qa.get("category") == 5 or not groups:
                continue
            questions.append(Question(path.stem, str(qa["question"]), groups, end,
                                      user=path.stem))
    return Dataset("locomo", sessions, questions)
