#!/usr/bin/env python3
"""Deterministic synthetic Obsidian vaults for the benchmarks (standard library only).

    python bench/generate_vault.py OUT_DIR --files N [--seed S] [--queries PATH]

Writes N notes into OUT_DIR (which must be empty or absent) and a query file (JSON, default
OUT_DIR + ".queries.json", beside the vault, never inside it).

What a note looks like: YAML frontmatter (title, aliases, tags, type, created, updated), an
optional H1, an intro paragraph, then H2 sections (some with H3 sub-sections) of paragraphs,
bullet and task lists, now and then a code fence. Text comes from ~40 topics, each with its
own vocabulary; a note mostly speaks of its own topic and borrows a little from one other.
Wikilinks follow a power law (a few hub notes get most links), three in four within the note's
own topic; some links are broken, some carry a heading anchor or a display text. Rare identifiers (ERR_CODE_1234, snake_case names,
CamelCase names, ticket keys) sit in 1-3 notes each, so exact-match queries have few hits.

Sizes: note length and section count are tuned so that the default chunk size (1,600 chars)
gives about 3 chunks a note (about 50,000 chunks at 16,894 files, 180,000 at 60,000).

The query file holds lexical queries (identifiers with the notes that contain them, and topic
keywords), semantic queries (paraphrases that avoid the topic's own words), and mixed ones.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

GENERATOR_VERSION = 3  # bump whenever the output for a given seed changes: run_all.py then regenerates

# name, folder, vocabulary (domain words and short phrases), paraphrases (queries in other words)
TOPICS: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("sourdough", "Kitchen/Baking",
     "sourdough starter levain dough flour hydration crumb crust loaf banneton proofing oven dutch-oven "
     "autolyse kneading gluten rye scoring bulk-fermentation yeast culture",
     ("making bread rise with wild yeast", "why my homemade loaf came out dense and flat",
      "feeding the jar of fermented flour paste", "getting a crackly brown outside on bread",
      "how long to let the bread rest before baking")),
    ("espresso", "Kitchen/Coffee",
     "espresso portafilter tamper grinder burr crema extraction shot puck basket dose yield "
     "channeling roast beans milk steam-wand latte tasting bitterness pressure",
     ("my morning coffee tastes sour and thin", "choosing a machine to brew strong small coffees",
      "frothing milk for a cafe style drink", "adjusting how fine the coffee is ground",
      "water running through the coffee too quickly")),
    ("gardening", "Home/Garden",
     "tomato seedlings compost mulch raised-bed watering soil fertilizer pruning harvest zucchini "
     "aphids trellis germination greenhouse perennials weeding irrigation pepper",
     ("growing vegetables in the backyard", "bugs eating the leaves of my plants",
      "when to plant seeds in spring", "keeping the dirt healthy and rich",
      "supporting climbing vines as they grow")),
    ("houseplants", "Home/Plants",
     "monstera pothos fiddle-leaf succulent repotting humidity drainage root-rot sunlight "
     "propagation cuttings overwatering fern orchid potting-mix terracotta misting",
     ("indoor greenery turning yellow", "keeping leafy plants alive in a dark apartment",
      "moving a plant to a bigger container", "starting new plants from clippings",
      "too much water killed my plant")),
    ("running", "Health/Running",
     "marathon tempo intervals cadence mileage taper long-run pace threshold shoes blisters "
     "hamstring recovery fartlek splits race-day carb-loading vo2max hills",
     ("preparing for a long distance race", "how to get faster at jogging",
      "sore legs after a long jog", "planning weekly training for endurance",
      "what to eat the night before a race")),
    ("strength", "Health/Gym",
     "squat deadlift bench-press barbell dumbbell sets reps progressive-overload hypertrophy "
     "protein warmup mobility spotter plates deload powerlifting grip kettlebell",
     ("building muscle with weights", "lifting heavier every week without injury",
      "my lower back hurts after lifting", "a beginner workout plan for the gym",
      "how much rest between exercises")),
    ("cycling", "Health/Cycling",
     "bicycle derailleur chain cassette brakes tubeless tire-pressure saddle cleats gravel "
     "crankset wheelset cadence climbing puncture lube helmet commuting",
     ("fixing a bike that shifts badly", "riding to work every day on two wheels",
      "my bike tire keeps going flat", "adjusting the seat height for comfort",
      "cleaning and oiling the drivetrain")),
    ("climbing", "Health/Climbing",
     "bouldering crag belay carabiner harness chalk crimps slab overhang rope quickdraw "
     "anchor lead-climbing grades fingerboard beta holds approach-shoes",
     ("getting stronger fingers for the wall", "staying safe when going up rock faces",
      "learning to trust the person holding the rope", "moving from indoor gym to outdoor routes",
      "which gear to buy for going up cliffs")),
    ("hiking", "Travel/Outdoors",
     "backpacking trail tent sleeping-bag trailhead switchbacks elevation water-filter map "
     "compass boots blisters summit campsite bear-canister layers rain-shell",
     ("packing for a multi day walk in the mountains", "staying dry on a wet trek",
      "finding clean water in the wilderness", "keeping food safe from animals at camp",
      "planning a route to a mountain top")),
    ("astronomy", "Science/Astronomy",
     "telescope eyepiece aperture nebula galaxy magnitude star-chart light-pollution "
     "equatorial-mount jupiter saturn collimation astrophotography meteor eclipse constellation",
     ("looking at planets from the backyard at night", "what to see in the night sky this month",
      "taking pictures of stars and deep space", "dark places away from city lights",
      "aligning the mirrors of my scope")),
    ("birdwatching", "Science/Birds",
     "warbler binoculars migration plumage songbird heron raptor feeder field-guide "
     "nesting checklist hawk sparrow wetland call identification spotting-scope",
     ("identifying small brown birds by their song", "spring migration sightings near the lake",
      "attracting wildlife to the backyard with seeds", "the best optics for watching wildlife",
      "large predatory birds circling overhead")),
    ("photography", "Hobbies/Photography",
     "aperture shutter-speed iso lens exposure histogram bokeh tripod raw lightroom "
     "composition golden-hour autofocus sensor prime-lens white-balance",
     ("taking sharper pictures in low light", "editing vacation pictures on the computer",
      "blurry background in portraits", "what camera settings to use at sunset",
      "choosing a fixed focal length for street shots")),
    ("woodworking", "Hobbies/Woodworking",
     "chisel dovetail mortise tenon hand-plane router sanding oak walnut joinery clamps "
     "workbench finish varnish table-saw grain glue-up jig",
     ("building furniture by hand", "joining two boards without screws",
      "making a smooth surface on timber", "protecting a wooden table from water",
      "setting up a small shop in the garage")),
    ("homerepair", "Home/Repairs",
     "faucet leak plumber drywall breaker outlet wiring pipe caulk grout water-heater "
     "thermostat circuit drain clog shutoff-valve insulation",
     ("the kitchen tap keeps dripping", "patching a hole in the wall",
      "lights flicker when the microwave runs", "the bathroom sink is blocked",
      "fixing things around the house myself")),
    ("budgeting", "Finance/Budget",
     "budget expenses savings emergency-fund spreadsheet groceries subscriptions debt "
     "credit-card interest paycheck envelope rent utilities cashflow sinking-fund",
     ("tracking where my money goes each month", "paying off what I owe faster",
      "putting money aside for surprises", "cutting recurring costs I forgot about",
      "planning household spending")),
    ("investing", "Finance/Investing",
     "index-fund etf portfolio dividends brokerage rebalancing asset-allocation bonds "
     "stocks compounding expense-ratio retirement diversification volatility capital-gains",
     ("putting savings into the market for the long term", "how to spread risk across holdings",
      "saving for when I stop working", "low cost funds that follow the whole market",
      "what to do when prices crash")),
    ("taxes", "Finance/Taxes",
     "tax-return deduction receipts refund withholding invoice freelance audit filing "
     "deadline accountant depreciation vat quarterly-estimate bracket",
     ("getting money back from the government after filing", "paperwork for self employed income",
      "which expenses reduce what I owe", "due dates for the yearly forms",
      "keeping records in case of an inspection")),
    ("sqlite", "Tech/Databases",
     "sqlite database transaction wal-mode index query-planner vacuum fts5 schema migration "
     "busy-timeout locking pragma join b-tree journal checkpoint",
     ("the database says it is locked", "making queries on a local db faster",
      "full text search inside an embedded database", "changing the table layout safely",
      "why the db file keeps growing")),
    ("kubernetes", "Tech/Infrastructure",
     "kubernetes pod deployment helm ingress container docker namespace kubectl replica "
     "autoscaling configmap secret node cluster liveness-probe service-mesh",
     ("running containers on a cluster", "the service restarts every few minutes",
      "scaling up the app when traffic spikes", "passing configuration to a running app",
      "rolling out a new version without downtime")),
    ("networking", "Tech/Networking",
     "dns tcp latency packet router firewall subnet vpn dhcp ip-address bandwidth tls "
     "handshake ping traceroute port proxy",
     ("websites load slowly at home", "the name of the server does not resolve",
      "connecting to the office network from outside", "why the connection times out",
      "blocking unwanted incoming traffic")),
    ("python", "Tech/Python",
     "python virtualenv pip decorator generator asyncio typing dataclass pytest import "
     "traceback list-comprehension dictionary exception module packaging",
     ("setting up an isolated environment for a project", "my script crashes with an error trace",
      "running tasks concurrently without threads", "writing automated checks for code",
      "publishing a library for others to install")),
    ("rust", "Tech/Rust",
     "rust borrow-checker lifetime ownership cargo crate trait enum match unsafe tokio "
     "result option clippy macro compile-error",
     ("the compiler complains that a value was moved", "memory safety without a garbage collector",
      "handling errors without exceptions", "sharing data between threads safely",
      "a systems language that prevents crashes")),
    ("frontend", "Tech/Web",
     "css flexbox grid react component state props hook bundler typescript dom "
     "accessibility responsive layout animation browser stylesheet",
     ("centering things on a web page", "the page looks broken on phones",
      "keeping user interface data in sync", "making a site usable with a screen reader",
      "a button that re-renders too often")),
    ("machinelearning", "Tech/ML",
     "model training dataset overfitting gradient embedding transformer loss-function "
     "validation tokenizer fine-tuning inference accuracy batch epoch",
     ("teaching a computer to recognise patterns", "the model does well on training data only",
      "turning sentences into vectors of numbers", "adapting a pretrained network to my data",
      "measuring how good predictions are")),
    ("security", "Tech/Security",
     "encryption password hashing certificate phishing two-factor vulnerability patch "
     "firewall ssh-key audit-log secrets token malware backup",
     ("keeping accounts safe from attackers", "a suspicious email asking for my login",
      "storing credentials safely", "logging in to servers without a password",
      "what to do after a data breach")),
    ("git", "Tech/Git",
     "git commit branch merge rebase conflict pull-request stash cherry-pick remote "
     "history bisect tag submodule blame",
     ("undoing a change I already saved in version control", "combining work from two people",
      "finding which change introduced a bug", "cleaning up messy history before review",
      "temporarily putting aside unfinished edits")),
    ("linux", "Tech/Linux",
     "bash systemd cron permissions ssh grep awk filesystem kernel package-manager "
     "journalctl disk-usage process chmod environment-variable",
     ("running a job every night on a server", "the disk is full on the machine",
      "a background service will not start", "searching text across many files",
      "giving a user access to a folder")),
    ("musictheory", "Hobbies/Music",
     "chord scale interval major minor progression modes circle-of-fifths cadence "
     "key-signature melody harmony arpeggio fretboard capo",
     ("why some notes sound good together", "writing a sad sounding song",
      "learning to play along with songs by ear", "finding notes on the guitar neck",
      "changing a song to a higher pitch")),
    ("piano", "Hobbies/Music",
     "piano sight-reading scales metronome sonata pedal fingering etude practice "
     "recital left-hand tempo dynamics sheet-music keyboard",
     ("getting better at reading sheet music", "practising every day on the keys",
      "both hands playing different rhythms", "preparing for a performance in front of people",
      "keeping steady timing while playing")),
    ("japanese", "Learning/Languages",
     "japanese kanji hiragana katakana vocabulary flashcards anki grammar particles "
     "listening immersion pitch-accent jlpt conjugation reading",
     ("memorising characters of an asian language", "spaced repetition for new words",
      "preparing for a language proficiency exam", "understanding native speakers on tv",
      "verb forms that change with politeness")),
    ("romanhistory", "Learning/History",
     "rome republic senate legion emperor caesar augustus aqueduct province gladiator "
     "consul forum carthage latin empire",
     ("how the ancient italian state fell", "army life in antiquity",
      "the man who crossed the rubicon", "water systems of ancient cities",
      "wars between ancient mediterranean powers")),
    ("stoicism", "Learning/Philosophy",
     "stoicism virtue marcus-aurelius seneca epictetus dichotomy-of-control journaling "
     "equanimity meditations ethics adversity reason",
     ("staying calm when things go wrong", "focusing only on what I can change",
      "ancient advice for a good life", "an emperor's private diary",
      "accepting loss and hardship")),
    ("meditation", "Health/Mind",
     "meditation breathing mindfulness sleep insomnia anxiety body-scan focus retreat "
     "attention routine stress bedtime relaxation",
     ("I cannot fall asleep at night", "calming down when I feel nervous",
      "sitting quietly for a few minutes each morning", "a wind-down habit before bed",
      "my mind wanders constantly")),
    ("nutrition", "Health/Food",
     "meal-prep protein fiber calories vegetables legumes oats batch-cooking macros "
     "hydration snacks lunchbox recipes fridge freezer",
     ("cooking lunches for the whole week on sunday", "eating healthier without much time",
      "filling breakfasts that keep me going", "storing cooked food for later",
      "getting enough nutrients on a plant based diet")),
    ("parenting", "Family/Kids",
     "toddler naps tantrums daycare bedtime potty-training screen-time picky-eating "
     "milestones pediatrician playground routines siblings",
     ("my two year old screams when we leave the park", "getting a small child to sleep",
      "a little one who refuses to eat vegetables", "how much tablet time is ok for kids",
      "preparing for a new baby in the family")),
    ("travel", "Travel/Trips",
     "itinerary flights passport visa hostel jet-lag luggage train-pass booking "
     "currency travel-insurance layover packing-list museum",
     ("planning a trip abroad on a budget", "what to bring in a carry-on bag",
      "adjusting to a new time zone", "documents needed to enter another country",
      "getting around europe by rail")),
    ("carmaintenance", "Home/Car",
     "oil-change brakes tires alternator battery coolant spark-plugs transmission "
     "mechanic dashboard-light timing-belt wipers alignment inspection",
     ("the engine warning light turned on", "the vehicle will not start on cold mornings",
      "a squealing noise when I stop", "routine service for an old automobile",
      "the steering pulls to one side")),
    ("projects", "Work/Projects",
     "roadmap milestone stakeholder sprint retrospective deadline backlog okr scope "
     "risk-register status-update kickoff deliverable estimate",
     ("the project is running late", "keeping everyone informed about progress",
      "deciding what to build next quarter", "looking back at what went well and badly",
      "agreeing on goals with the leadership")),
    ("writing", "Creative/Writing",
     "novel plot character dialogue outline draft revision point-of-view scene "
     "protagonist worldbuilding editor manuscript pacing",
     ("making the story's hero more believable", "the middle of my book drags",
      "writing conversations that sound natural", "planning a story before writing it",
      "rewriting the first version of a manuscript")),
    ("chess", "Hobbies/Chess",
     "chess opening endgame gambit checkmate pawn-structure tactics fork pin castling "
     "sicilian rating tournament blunder",
     ("improving at the board game with kings and queens", "how to start a game well",
      "winning when few pieces are left", "stop giving away pieces by mistake",
      "preparing for a competition over sixty-four squares")),
    ("beekeeping", "Hobbies/Bees",
     "beehive honey queen colony swarm brood frames varroa smoker nectar pollen "
     "beekeeper super wax inspection",
     ("keeping insects that make something sweet", "the colony left the box",
      "mites harming the insects", "harvesting from the boxes in late summer",
      "checking the health of the insects in spring")),
    ("aquarium", "Hobbies/Fish",
     "aquarium filter cycling ammonia nitrate water-change tetra cichlid substrate "
     "heater ph algae planted-tank quarantine",
     ("the fish tank water turned green", "setting up a new tank for tropical fish",
      "the fish are gasping at the surface", "keeping underwater plants alive",
      "adding new fish without making the others sick")),
]

GENERIC_ADJ = ("better", "worse", "more stable", "unpredictable", "faster", "slower", "more consistent",
               "noticeably different", "surprisingly good", "a bit fragile", "easier", "harder to judge")
TEMPLATES = (
    "The {a} affects how the {b} behaves, especially when the {c} is {adj}.",
    "I noticed that adjusting the {a} made the {b} {adj}.",
    "Next time, check the {a} before touching the {b}.",
    "A common mistake is to ignore the {a} and focus only on the {b}.",
    "According to my notes, the {a} and the {b} should be reviewed together.",
    "When the {a} changes, the {b} usually follows within a day or two.",
    "The {a} was {adj} than last week, probably because of the {b}.",
    "It helps to write down the {a}, the {b} and the {c} every single time.",
    "My rule of thumb: keep the {a} simple and let the {b} do the work.",
    "There is a trade-off between the {a} and the {b} that I still do not fully understand.",
    "After reading about the {a}, I tried a different approach to the {b}.",
    "The {a} turned out to matter much more than the {c}.",
    "Without a good {a}, the {b} becomes {adj} and hard to predict.",
    "I compared two ways of handling the {a}; the second one felt {adj}.",
    "Worth remembering: the {a} depends on the {b}, not the other way round.",
    "Small changes to the {a} add up over a few weeks.",
    "Someone recommended measuring the {a} before and after changing the {b}.",
    "The {a} and the {c} interact in ways that are easy to overlook.",
)
LIST_TEMPLATES = ("check the {a}", "compare {a} and {b}", "read more about the {a}", "write down the {a}",
                  "ask about the {a}", "try a new {a}", "replace the {a}", "log the {b} after the {a}")
SECTION_NAMES = ("Overview", "Notes", "Details", "Observations", "Open questions", "Next steps", "Log",
                 "Troubleshooting", "What worked", "What did not work", "Ideas", "Summary", "Background",
                 "Setup", "Results", "Lessons learned", "Checklist", "References")
NOTE_TYPES = ("note", "note", "note", "reference", "log", "project", "meeting", "idea")
STATUS_TAGS = ("status/draft", "status/active", "status/done", "status/someday")
CODE_LANGS = ("python", "bash", "sql", "yaml", "json")
RARE_WORDS = ("zephyrine", "quorlax", "vintrebel", "mossgrave", "plinthor", "cazimbo", "drellwick",
              "fenestrov", "gallimaw", "hustrand", "ixolite", "jorvanne")


@dataclass
class Topic:
    name: str
    folder: str
    words: list[str]
    paraphrases: tuple[str, ...]
    sentences: list[str] = field(default_factory=list)
    phrases: list[str] = field(default_factory=list)


@dataclass
class NotePlan:
    index: int
    topic: int
    other: int
    title: str
    path: str  # vault-relative, with .md
    identifiers: list[str] = field(default_factory=list)


def _word(w: str) -> str:
    return w.replace("-", " ")


def build_topics(rng: random.Random) -> list[Topic]:
    topics = []
    for name, folder, words, paraphrases in TOPICS:
        t = Topic(name, folder, words.split(), paraphrases)
        pool = [_word(w) for w in t.words]
        for _ in range(700):  # a sentence pool per topic: note assembly then only picks
            a, b, c = rng.sample(pool, 3)
            t.sentences.append(rng.choice(TEMPLATES).format(a=a, b=b, c=c, adj=rng.choice(GENERIC_ADJ)))
        for _ in range(120):
            a, b = rng.sample(pool, 2)
            t.phrases.append(rng.choice(LIST_TEMPLATES).format(a=a, b=b))
        topics.append(t)
    return topics


def plan_notes(rng: random.Random, topics: list[Topic], n: int) -> list[NotePlan]:
    # Topic sizes vary (a few big areas, a long tail), like a real vault.
    weights = [1.0 / (1 + i) ** 0.6 for i in range(len(topics))]
    rng.shuffle(weights)
    cum = list(itertools.accumulate(weights))
    seen: set[str] = set()
    plans = []
    for i in range(n):
        ti = bisect.bisect(cum, rng.random() * cum[-1])
        oi = rng.randrange(len(topics))
        t = topics[ti]
        a, b = rng.sample(t.words, 2)
        qualifier = rng.choice(("notes", "log", "guide", "ideas", "checklist", "questions", "review",
                                "experiments", "basics", "plan", "journal", "comparison"))
        title = f"{_word(a).capitalize()} and {_word(b)} {qualifier}"
        if title.lower() in seen:
            title = f"{title} {i}"
        seen.add(title.lower())
        sub = f"{t.folder}/{rng.choice(('', '', 'Archive/', 'Inbox/', f'{2018 + i % 7}/'))}"
        plans.append(NotePlan(i, ti, oi, title, f"{sub}{title}.md".replace("//", "/")))
    return plans


class Identifiers:
    """Rare tokens, each placed in 1-3 notes; the query file keeps where each one went."""

    def __init__(self, rng: random.Random, topics: list[Topic], plans: list[NotePlan]) -> None:
        self.where: dict[str, list[str]] = {}
        count = max(20, len(plans) // 3)
        used: set[str] = set()
        for k in range(count):
            kind = k % 4
            t = topics[rng.randrange(len(topics))]
            if kind == 0:
                ident = f"ERR_CODE_{rng.randrange(10000, 99999)}"
            elif kind == 1:
                a, b = rng.sample(t.words, 2)
                ident = f"{a.replace('-', '_')}_{b.replace('-', '_')}_{rng.randrange(100, 9999)}"
            elif kind == 2:
                a, b = rng.sample(t.words, 2)
                ident = f"{a.replace('-', ' ').title().replace(' ', '')}{b.replace('-', ' ').title().replace(' ', '')}" \
                        f"{rng.choice(('Handler', 'Config', 'Builder', 'Store', 'Task'))}{rng.randrange(10, 999)}"
            else:
                ident = f"{rng.choice(('OPS', 'INFRA', 'HOME', 'PROJ', 'FIN', 'LAB'))}-{rng.randrange(1000, 99999)}"
            if ident in used:
                continue
            used.add(ident)
            hosts = rng.sample(plans, min(len(plans), rng.choice((1, 1, 1, 2, 2, 3))))
            for plan in hosts:
                plan.identifiers.append(ident)
            self.where[ident] = sorted(p.path for p in hosts)


def power_law_targets(rng: random.Random, n: int) -> list[float]:
    order = list(range(n))
    rng.shuffle(order)  # which notes are hubs: random, not the first ones
    weights = [0.0] * n
    for rank, idx in enumerate(order):
        weights[idx] = 1.0 / (rank + 1) ** 1.05
    return list(itertools.accumulate(weights))


class Writer:
    def __init__(self, rng: random.Random, topics: list[Topic], plans: list[NotePlan]) -> None:
        self.rng = rng
        self.topics = topics
        self.plans = plans
        self.cum = power_law_targets(rng, len(plans))
        self.total = self.cum[-1]
        # Most links stay within the note's topic (real vaults link what belongs together).
        self.by_topic: list[list[NotePlan]] = [[] for _ in topics]
        for plan in plans:
            self.by_topic[plan.topic].append(plan)
        self.topic_cum = [power_law_targets(rng, len(members)) if members else [] for members in self.by_topic]

    def link(self, plan: NotePlan) -> str:
        rng = self.rng
        if rng.random() < 0.05:  # broken: a note that does not exist
            return f"[[{rng.choice(self.topics[rng.randrange(len(self.topics))].words).capitalize()} missing note {rng.randrange(1000)}]]"
        members, cum = self.by_topic[plan.topic], self.topic_cum[plan.topic]
        if rng.random() < 0.75 and len(members) > 1:
            target = members[min(len(members) - 1, bisect.bisect(cum, rng.random() * cum[-1]))]
        else:
            target = self.plans[min(len(self.plans) - 1, bisect.bisect(self.cum, rng.random() * self.total))]
        r = rng.random()
        if r < 0.1:
            return f"[[{target.title}|{target.title.split()[0].lower()}]]"
        if r < 0.15:
            return f"[[{target.title}#{rng.choice(SECTION_NAMES)}]]"
        return f"[[{target.title}]]"

    def sentences(self, plan: NotePlan, k: int) -> list[str]:
        rng = self.rng
        own = self.topics[plan.topic].sentences
        other = self.topics[plan.other].sentences
        out = [own[rng.randrange(700)] if rng.random() < 0.85 else other[rng.randrange(700)] for _ in range(k)]
        return out

    def paragraph(self, plan: NotePlan, k: int, links: float, idents: list[str]) -> str:
        rng = self.rng
        parts = self.sentences(plan, k)
        if rng.random() < links:
            pos = rng.randrange(len(parts))
            parts[pos] = parts[pos][:-1] + f", see {self.link(plan)}."
        if idents and rng.random() < 0.5:
            ident = idents.pop()
            parts.insert(rng.randrange(len(parts) + 1),
                         rng.choice(("Related to `{i}`.", "This came up with {i} again.",
                                     "The failure was logged as {i}.", "Tracked in {i}.")).format(i=ident))
        if rng.random() < 0.15:
            parts.append(f"#{self.topics[plan.topic].name}/{rng.choice(self.topics[plan.topic].words)}")
        return " ".join(parts)

    def note(self, plan: NotePlan) -> str:
        rng = self.rng
        t = self.topics[plan.topic]
        idents = list(plan.identifiers)
        created_day = date(2018 + plan.index % 7, 1, 1) + timedelta(days=rng.randrange(365))
        created = created_day.isoformat()
        updated = (created_day + timedelta(days=rng.randrange(400))).isoformat()
        tags = [t.name, f"{t.name}/{rng.choice(t.words)}"]
        if rng.random() < 0.5:
            tags.append(rng.choice(STATUS_TAGS))
        lines = ["---", f"title: {plan.title}"]
        if rng.random() < 0.3:
            lines.append(f"aliases: [{plan.title.split(' and ')[0]} {plan.index}]")
        lines += [f"tags: [{', '.join(tags)}]", f"type: {rng.choice(NOTE_TYPES)}", f"created: {created}",
                  f"updated: {updated}", "---", ""]
        if rng.random() < 0.5:
            lines += [f"# {plan.title}", ""]
        lines += [self.paragraph(plan, rng.randint(2, 4), 0.8, idents), ""]
        # Sections: about 2 H2 sections of ~1,000-1,400 chars; with the intro, ~3 chunks a note.
        sections = rng.choice((1, 2, 2, 2, 3))
        for name in rng.sample(SECTION_NAMES, sections):
            lines += [f"## {name}", ""]
            lines += [self.paragraph(plan, rng.randint(4, 7), 0.6, idents), ""]
            r = rng.random()
            if r < 0.35:
                lines += [f"- {rng.choice(t.phrases)}" for _ in range(rng.randint(2, 5))] + [""]
            elif r < 0.5:
                lines += [f"- [{rng.choice((' ', 'x'))}] {rng.choice(t.phrases)}" for _ in range(rng.randint(2, 4))] + [""]
            if rng.random() < 0.3:
                lines += [f"### {rng.choice(t.words).replace('-', ' ').capitalize()}", ""]
                lines += [self.paragraph(plan, rng.randint(2, 4), 0.4, idents), ""]
            if rng.random() < 0.08:
                lines += self.code(plan, idents)
        while idents:  # every planned identifier lands somewhere
            lines += [f"{self.sentences(plan, 1)[0]} Also seen with {idents.pop()}.", ""]
        if rng.random() < 0.02:
            lines += [f"A rare word for a rare query: {rng.choice(RARE_WORDS)}.", ""]
        return "\n".join(lines)

    def code(self, plan: NotePlan, idents: list[str]) -> list[str]:
        rng = self.rng
        lang = rng.choice(CODE_LANGS)
        w = [x.replace("-", "_") for x in rng.sample(self.topics[plan.topic].words, 3)]
        takes_ident = lang in ("python", "json") and idents and "_" in idents[-1] and idents[-1].islower()
        name = idents.pop() if takes_ident else f"{w[0]}_{w[1]}"
        body = {
            "python": [f"def {name}({w[2]}):", f"    return {w[2]}.{w[0]} * 2"],
            "bash": [f"export {w[0].upper()}_DIR=~/{w[1]}", f"ls -la \"${w[0].upper()}_DIR\" | grep {w[2]}"],
            "sql": [f"SELECT {w[0]}, count(*) FROM {w[1]}", f"WHERE {w[2]} IS NOT NULL GROUP BY {w[0]};"],
            "yaml": [f"{w[0]}:", f"  {w[1]}: true", f"  {w[2]}: 3"],
            "json": [f'{{"{w[0]}": {{"{w[1]}": "{name}", "{w[2]}": 1}}}}'],
        }[lang]
        return [f"```{lang}", *body, "```", ""]


def make_queries(rng: random.Random, topics: list[Topic], ids: Identifiers, n_files: int) -> dict[str, object]:
    idents = sorted(ids.where)
    rng.shuffle(idents)
    lexical: list[dict[str, object]] = []
    for ident in idents[:250]:
        lexical.append({"q": ident, "kind": "identifier", "literal": True, "expect": ids.where[ident]})
    for _ in range(150):
        t = rng.choice(topics)
        words = rng.sample(t.words, rng.choice((1, 2, 2, 3)))
        lexical.append({"q": " ".join(_word(w) for w in words), "kind": "keyword", "literal": len(words) == 1
                        and "-" not in words[0], "topic": t.name, "folder": t.folder})
    starters = ("{p}", "how do I deal with {p}", "notes about {p}", "what did I learn about {p}",
                "{p}?", "ideas for {p}", "anything on {p}", "tips: {p}")
    semantic = []
    base = [(t, p) for p_i in range(5) for t in topics for p in t.paraphrases[p_i:p_i + 1]]
    for i in range(400):
        t, p = base[i % len(base)]
        q = p if i < len(base) else starters[1 + i % (len(starters) - 1)].format(p=p)
        semantic.append({"q": q, "kind": "paraphrase", "topic": t.name, "folder": t.folder})
    mixed = []
    for i in range(320):
        t = rng.choice(topics)
        if i % 2 == 0 and i // 2 < len(idents):
            ident = idents[-1 - i // 2]
            mixed.append({"q": f"{ident} {rng.choice(t.paraphrases)}", "kind": "identifier+paraphrase",
                          "expect": ids.where[ident]})
        else:
            mixed.append({"q": f"{_word(rng.choice(t.words))} {rng.choice(t.paraphrases)}",
                          "kind": "keyword+paraphrase", "topic": t.name, "folder": t.folder})
    return {"files": n_files, "lexical": lexical, "semantic": semantic, "mixed": mixed,
            "rare_words": list(RARE_WORDS)}


def generate(out: Path, files: int, seed: int, queries: Path) -> dict[str, object]:
    rng = random.Random(seed)
    topics = build_topics(rng)
    plans = plan_notes(rng, topics, files)
    ids = Identifiers(rng, topics, plans)
    writer = Writer(rng, topics, plans)
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        raise SystemExit(f"{out} is not empty: give a new folder")
    made: set[str] = set()
    total = 0
    for plan in plans:
        text = writer.note(plan)
        folder = os.path.dirname(plan.path)
        if folder not in made:
            (out / folder).mkdir(parents=True, exist_ok=True)
            made.add(folder)
        data = text.encode("utf-8")
        total += len(data)
        with open(out / plan.path, "wb") as fh:
            fh.write(data)
    # A few non-note files, as real vaults have.
    (out / ".obsidian").mkdir(exist_ok=True)
    (out / ".obsidian" / "app.json").write_text('{"userIgnoreFilters": []}\n')
    (out / "Attachments").mkdir(exist_ok=True)
    (out / "Attachments" / "diagram.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    q = make_queries(rng, topics, ids, files)
    q.update({"seed": seed, "vault": str(out), "bytes": total, "generator": GENERATOR_VERSION})
    queries.write_text(json.dumps(q, indent=1, ensure_ascii=False) + "\n")
    return {"files": files, "bytes": total, "identifiers": len(ids.where), "folders": len(made)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="new (empty) vault folder")
    parser.add_argument("--files", type=int, required=True, help="number of notes")
    parser.add_argument("--seed", type=int, default=1, help="random seed (same seed, same vault)")
    parser.add_argument("--queries", type=Path, help="query file (default: OUT.queries.json beside the vault)")
    args = parser.parse_args(argv)
    if args.files < 1:
        parser.error("--files must be at least 1")
    queries = args.queries or args.out.parent / f"{args.out.name}.queries.json"
    started = time.perf_counter()
    info = generate(args.out, args.files, args.seed, queries)
    print(f"wrote {info['files']} notes ({info['bytes'] / 1e6:.1f} MB, {info['folders']} folders, "
          f"{info['identifiers']} rare identifiers) to {args.out} in {time.perf_counter() - started:.1f} s; "
          f"queries in {queries}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
