"""The people of ``zh_pool`` (``make_zh_pool.py``): each one's life as messages, and the questions
it can answer.

A :class:`Person` says messages from the shared phrasings of :mod:`zh_pool_vocab` and drafts
questions about itself with their gold messages; :func:`make_person` draws one life (repeated
events, purchases, trips, doctors, children, appointments, meals, hobbies, work, chatter).
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from zh_pool_vocab import (
    ACTS,
    AILMENTS,
    APPOINTMENT,
    CHATTER,
    CHECKUP,
    CHILD_CLASS,
    CHILD_GIVEN,
    CHILD_INTRO,
    CITIES,
    COMPANIES,
    COURSES,
    DOCTOR,
    DOCTOR_AFTER,
    FINDINGS,
    FIRST_DAY,
    GIVEN,
    HOBBIES,
    HOLIDAY,
    HOLIDAY_WHAT,
    HOLIDAYS,
    HOSPITALS,
    HOTELS,
    INTRODUCTION,
    ITEMS,
    JOBS,
    MEAL,
    MEALS,
    NAMED_CHATTER,
    NUMERALS,
    ONLINE,
    PURCHASE,
    SERIES,
    SURNAMES,
    TRIP_HOTEL,
    TRIP_PLAN,
    TRIP_TICKET,
    WEEKDAYS,
    WEIGHT_FIRST,
    WEIGHT_LATER,
    WORK,
    Series,
    Template,
)


@dataclass(eq=False)
class Message:
    text: str
    when: datetime
    checks: tuple[str, ...]  # values the message must hold as said
    mid: int = -1


@dataclass
class Draft:
    kind: str
    text: str
    answer: str
    gold: list[Message]
    named: bool = True  # the question names its person (else a condition picks them)
    key: tuple[str, ...] = ()  # the condition that picks the person, when not named
    month: int = 0  # the month a question scoped to one says "{month}" for


@dataclass
class Target:
    """A fact a question can ask about a person, named or picked by a condition:
    phrasings with ``{n}`` where the person goes."""

    options: tuple[str, ...]
    answer: str
    gold: tuple[Message, ...]


@dataclass
class Subject:
    """A condition that picks one person of the pool (``key`` is what must be unique):
    phrasings that stand for the person, and the messages that state the condition."""

    key: tuple[str, ...]
    phrases: tuple[str, ...]
    said: tuple[Message, ...]


@dataclass(eq=False)
class Person:
    tid: str
    name: str
    city: str
    start: datetime
    days: int  # how long the trajectory runs
    rng: random.Random
    messages: list[Message] = field(default_factory=list)
    drafts: list[Draft] = field(default_factory=list)
    questions: list[Draft] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    subjects: list[Subject] = field(default_factory=list)
    asked: datetime = FIRST_DAY  # when the questions are asked: after the last message
    voice: str = "named"  # "named": every fact names its person; "first": said as 我

    def say(self, template: Template, day: int, **values: Any) -> Message:
        """A message on ``day`` of the trajectory at an hour its phrasing fits; every value
        the phrasing uses is checked to be in the text."""
        text, (low, high) = template
        weekday = (self.start + timedelta(days=day)).weekday()
        if "周末" in text and weekday < 5:  # said on the weekend it speaks of
            day += 5 - weekday + self.rng.randint(0, 1)
        used = [f for _, f, _, _ in string.Formatter().parse(text) if f]
        when = self.start + timedelta(days=day, hours=self.rng.randint(low, high),
                                      minutes=self.rng.randint(0, 59))
        said_as = self.name if self.voice == "named" else "我"
        message = Message(text.format(n=said_as, **values), when,
                          tuple(str(values[f]) for f in used if f != "n"))
        self.messages.append(message)
        return message

    def ask(self, kind: str, options: tuple[str, ...], answer: object, *gold: Message,
            month: int = 0) -> None:
        """A question about this person by name; a simple or conditional one is also a
        target that a question picking the person by a condition can ask."""
        self.drafts.append(Draft(kind, self.rng.choice(options).replace("{n}", self.name),
                                 str(answer), list(gold), month=month))
        if kind in ("simple", "conditional"):
            self.targets.append(Target(options, str(answer), gold))

    def subject(self, key: tuple[str, ...], phrases: tuple[str, ...], *said: Message) -> None:
        self.subjects.append(Subject(key, phrases, said))


def _date(when: datetime) -> str:
    return f"{when.month}月{when.day}号"


def _ride(minutes: int) -> str:
    hours, rest = divmod(minutes, 60)
    return f"{hours}个半小时" if rest == 30 else f"{hours}小时" if rest == 0 \
        else f"{hours}小时{rest}分钟"


def _clock(when: datetime) -> str:
    return f"{when.hour}:{when.minute:02d}"


def _month_span(p: Person, month: int) -> tuple[int, int]:
    """The days of ``month`` as offsets from the trajectory's start: (first, last)."""
    first = datetime(FIRST_DAY.year, month, 1)
    after = datetime(FIRST_DAY.year + month // 12, month % 12 + 1, 1)
    return (first - p.start).days, (after - p.start).days - 1


def _series(p: Person, series: Series, count: int, ask: bool, extra: int = 0) -> None:
    """``count`` times the event; asked, with ``extra`` more times in other months, its
    questions are about the month the ``count`` fall in (the others are not gold)."""
    rng = p.rng
    month = 0
    if extra:
        # a month with room for the gold days, each at least six days from its end (a
        # weekend phrasing moves its day to the weekend: it stays in the month)
        months = []
        for m in range(p.start.month, 13):
            first, last = _month_span(p, m)
            days = range(max(first, 0), min(last - 6, p.days - 1) + 1)
            others = [d for d in range(p.days) if d < first - 6 or d > last]
            if len(days) >= count + 2 and len(others) >= extra:
                months.append((m, days, others))
        month, inside, outside = rng.choice(months)
        days = sorted(rng.sample(inside, count) + rng.sample(outside, extra))
    else:
        days = sorted(rng.sample(range(p.days), count))
    said: list[Message] = []
    values: list[dict[str, Any]] = []
    distinct: dict[str, list[Any]] = {}
    if series.listed is not None and rng.random() < 0.4 \
            and len(series.values[series.listed[0]]) >= len(days):  # a new shop each time
        key = series.listed[0]
        distinct[key] = rng.sample(series.values[key], len(days))
    for day in days:
        v = {f: distinct[f].pop() if f in distinct else rng.choice(choices)
             for f, choices in series.values.items()}
        said.append(p.say(rng.choice(series.templates), day, **v))
        values.append(v)
    if not ask:
        return
    if month:
        gold = [i for i, m in enumerate(said) if m.when.month == month]
        assert len(gold) == count, (p.name, series.name, month)
        said, values = [said[i] for i in gold], [values[i] for i in gold]

    def scoped(options: tuple[str, ...]) -> tuple[str, ...]:
        if not month:
            return options
        return tuple(o.replace("这段时间", "").replace("这阵子", "").replace("{n}", "{n}{month}")
                     for o in options)

    # every phrasing says the summed and the listed field, so each message is needed
    p.ask("aggregative", scoped(series.count_q), f"{count}次", *said, month=month)
    if series.total is not None:
        key, unit, questions = series.total
        p.ask("aggregative", scoped(questions), f"{sum(v[key] for v in values)}{unit}", *said,
              month=month)
    if series.listed is not None:
        key, questions = series.listed
        listed = [v[key] for v in values]
        if len(set(listed)) == len(listed):
            p.ask("aggregative", scoped(questions), "、".join(listed), *said, month=month)


def _purchases(p: Person, count: int) -> None:
    rng = p.rng
    bought: list[tuple[str, int, Message]] = []
    for item, day in zip(rng.sample(sorted(ITEMS), count),
                         sorted(rng.sample(range(p.days), count)), strict=True):
        mw, low, high = ITEMS[item]
        price, shop = rng.randint(low, high), rng.choice(ONLINE)
        m = p.say(rng.choice(PURCHASE), day, item=item, mw=mw, shop=shop, price=price)
        bought.append((item, price, m))
        p.subject(("purchase", item, str(price)), (f"花{price}块买了{item}的那位",), m)
        p.ask("simple", (f"{{n}}买的{item}多少钱？", f"{{n}}的{item}花了多少钱？"), f"{price}元", m)
        p.ask("simple", (f"{{n}}的{item}是在哪买的？", f"{{n}}在哪个平台买的{item}？"), shop, m)
    for i, (a, pa, ma) in enumerate(bought):
        for b, pb, mb in bought[i + 1:]:
            if pa == pb:
                continue
            p.ask("comparative",
                  (f"{{n}}买的{a}和{b}哪个更贵？", f"{{n}}的{a}和{b}，哪个花的钱多？"),
                  a if pa > pb else b, ma, mb)
            p.ask("post_processing", (f"{{n}}买{a}和{b}一共花了多少钱？",), f"{pa + pb}元",
                  ma, mb)
            high, low = ((a, pa), (b, pb)) if pa > pb else ((b, pb), (a, pa))
            p.ask("post_processing", (f"{{n}}买的{high[0]}比{low[0]}贵多少钱？",),
                  f"{high[1] - low[1]}元", ma, mb)


def _trip(p: Person, avoid: set[str]) -> None:
    rng = p.rng
    city = rng.choice([c for c in CITIES if c != p.city and c not in avoid])
    avoid.add(city)
    planned = rng.randint(3, p.days - 16)
    leave = p.start + timedelta(days=planned + rng.randint(5, 10))
    nights = rng.randint(2, 4)
    plan = p.say(rng.choice(TRIP_PLAN), planned, date=_date(leave), city=city,
                 nights=NUMERALS[nights])
    departs = leave + timedelta(hours=rng.randint(6, 15), minutes=rng.randrange(0, 60, 5))
    ride = rng.randrange(90, 420, 10)
    train = f"G{rng.randint(100, 2999)}"
    ticket = p.say(rng.choice(TRIP_TICKET), planned + rng.randint(1, 4), train=train,
                   clock=_clock(departs), ride=_ride(ride))
    price = rng.randint(239, 599)
    hotel_name = rng.choice(HOTELS)
    hotel = p.say(rng.choice(TRIP_HOTEL), planned + rng.randint(1, 4), hotel=hotel_name,
                  price=price)
    p.subject(("trip", city, hotel_name), (f"去{city}出差住{hotel_name}的那位",), plan, hotel)
    p.ask("simple", (f"{{n}}哪天去{city}出差？", f"{{n}}去{city}出差是几号走？"), _date(leave),
          plan)
    p.ask("conditional", (f"{{n}}去{city}出差住的哪家酒店？", f"{{n}}到{city}出差订的什么酒店？"),
          hotel_name, plan, hotel)
    p.ask("conditional", (f"{{n}}去{city}出差坐的哪趟车？", f"{{n}}去{city}出差的高铁是几点的？"),
          f"{train}，{_clock(departs)}", plan, ticket)
    p.ask("post_processing", (f"{{n}}去{city}出差住酒店一共要花多少钱？",),
          f"{nights * price}元", plan, hotel)
    arrives = departs + timedelta(minutes=ride)
    p.ask("post_processing", (f"{{n}}去{city}出差的高铁几点能到？",),
          _clock(arrives) + ("（第二天）" if arrives.date() != departs.date() else ""),
          plan, ticket)


def _holiday(p: Person, avoid: set[str]) -> None:
    rng = p.rng
    fits = [(h, end) for h, end in HOLIDAYS
            if 0 <= (end - p.start).days <= p.days - 4]
    if not fits:
        return
    holiday, end = rng.choice(fits)
    city = rng.choice([c for c in CITIES if c != p.city and c not in avoid])
    avoid.add(city)
    m = p.say(rng.choice(HOLIDAY), (end - p.start).days + rng.randint(0, 3), holiday=holiday,
              city=city, days=NUMERALS[rng.randint(2, 4)], what=rng.choice(HOLIDAY_WHAT))
    p.subject(("holiday", holiday, city), (f"{holiday}去{city}玩的那位",), m)
    p.ask("simple", (f"{{n}}{holiday}去哪玩了？", f"{{n}}{holiday}假期去了哪个城市？"), city, m)


def _doctor(p: Person) -> None:
    rng = p.rng
    symptom = rng.choice(sorted(AILMENTS))
    dept, medicine = AILMENTS[symptom]
    day = rng.randint(0, p.days - 6)
    seen = rng.randint(1, 3)
    visit = p.start + timedelta(days=day + seen)
    part = rng.choice(("上午", "下午"))
    hospital = rng.choice(HOSPITALS)
    first = p.say(rng.choice(DOCTOR), day, symptom=symptom, hospital=hospital, dept=dept,
                  date=_date(visit), part=part)
    again = rng.choice((5, 7, 10, 14))
    after = p.say(rng.choice(DOCTOR_AFTER), day + seen, medicine=medicine, days=again)
    if part == "下午":  # said after the visit
        after.when = after.when.replace(hour=rng.randint(17, 21))
    p.ask("simple", (f"{{n}}{symptom}约的哪家医院？", f"{{n}}{symptom}挂的哪个医院的号？"),
          hospital, first)
    p.ask("conditional", (f"{{n}}{symptom}去看医生，开了什么药？",
                          f"{{n}}因为{symptom}看{dept}，医生给开的什么药？"),
          medicine, first, after)
    p.ask("post_processing", (f"{{n}}看{dept}之后哪天要去复查？",),
          _date(visit + timedelta(days=again)), first, after)


def _checkup(p: Person) -> None:
    rng = p.rng
    bp = f"{rng.randint(105, 150)}/{rng.randint(65, 98)}"
    finding = rng.choice(FINDINGS)
    m = p.say(rng.choice(CHECKUP), rng.randrange(p.days), bp=bp, finding=finding)
    p.ask("simple", ("{n}体检血压多少？", "{n}体检报告上血压是多少？"), bp, m)
    p.ask("simple", ("{n}体检查出了什么问题？",), finding, m)


def _weight(p: Person) -> None:
    rng = p.rng
    kg = rng.randint(62, 95)
    lost = rng.randint(2, 8)
    first = p.say(rng.choice(WEIGHT_FIRST), rng.randint(0, 12), kg=kg)
    later = p.say(rng.choice(WEIGHT_LATER), rng.randint(p.days - 15, p.days - 1), kg=kg - lost)
    p.ask("post_processing", ("{n}减肥瘦了多少斤？", "{n}这次减肥一共减掉了几斤？"),
          f"{lost * 2}斤", first, later)


def _children(p: Person, surname: str, names: Names) -> None:
    rng = p.rng
    relations = rng.sample(("儿子", "女儿"), 2 if rng.random() < 0.3 else 1)
    kids: list[tuple[str, str, int, Message]] = []
    intros = rng.sample(CHILD_INTRO, len(relations))  # two children, said two ways
    for rel, said in zip(relations, intros, strict=True):
        child = names.new(surname, CHILD_GIVEN[rel])
        p.children.append(child)
        age = rng.choice([a for a in range(3, 16) if all(a != k[2] for k in kids)])
        intro = p.say(said, rng.randint(0, p.days // 2), rel=rel,
                      child=child, age=age)
        kids.append((rel, child, age, intro))
        p.ask("simple", (f"{{n}}的{rel}叫什么名字？", f"{{n}}家{rel}叫啥？"), child, intro)
        p.ask("post_processing", (f"{{n}}的{rel}明年几岁？", f"{{n}}的{rel}再过三年多大？"),
              "", intro)
        asked = p.drafts[-1]
        asked.answer = f"{age + (1 if '明年' in asked.text else 3)}岁"
        if rng.random() < 0.75:
            course = rng.choice(COURSES)
            lesson = p.say(rng.choice(CHILD_CLASS), rng.randint(p.days // 2, p.days - 1),
                           child=child, course=course, weekday=rng.choice("六日"))
            p.ask("conditional", (f"{{n}}的{rel}报了什么班？", f"{{n}}给{rel}报的什么课？"),
                  course, intro, lesson)
            p.ask("conditional", (f"{{n}}家报{course}的孩子今年几岁？",), f"{age}岁",
                  intro, lesson)
    if len(kids) == 2:
        (ra, _, aa, ma), (rb, _, ab, mb) = kids
        p.ask("comparative", (f"{{n}}的{ra}和{rb}谁大？",), ra if aa > ab else rb, ma, mb)
        p.ask("post_processing", ("{n}家两个孩子差几岁？",), f"{abs(aa - ab)}岁", ma, mb)


def _appointments(p: Person, count: int) -> None:
    rng = p.rng
    made: list[tuple[str, datetime, Message]] = []
    for act in rng.sample(ACTS, count):
        day = rng.randint(0, p.days - 13)
        when = p.start + timedelta(days=day + rng.randint(2, 12), hours=rng.randint(9, 17),
                                   minutes=rng.choice((0, 30)))
        hour = when.hour if when.hour <= 12 else when.hour - 12
        clock = ("上午" if when.hour < 12 else "中午" if when.hour == 12 else "下午") + \
            f"{hour}点" + ("半" if when.minute else "")
        m = p.say(rng.choice(APPOINTMENT), day, date=_date(when), clock=clock, act=act)
        made.append((act, when, m))
        p.subject(("appointment", act, _date(when)), (f"{_date(when)}{act}的那位",), m)
        p.ask("simple", (f"{{n}}哪天{act}？", f"{{n}}什么时候{act}？"),
              f"{_date(when)}{clock}", m)
        p.ask("post_processing", (f"{{n}}{act}那天是星期几？",), "星期" + WEEKDAYS[when.weekday()],
              m)
    if len(made) == 2 and made[0][1].date() != made[1][1].date():
        (a, wa, ma), (b, wb, mb) = made
        p.ask("comparative", (f"{{n}}是先{a}还是先{b}？",), a if wa < wb else b, ma, mb)


def _meals(p: Person, count: int) -> None:
    rng = p.rng
    had: list[tuple[str, int, Message]] = []
    for food in rng.sample(sorted(MEALS), count):
        place, price = rng.choice(MEALS[food]), rng.randint(60, 260)
        m = p.say(rng.choice(MEAL), rng.randrange(p.days), place=place, food=food, price=price)
        had.append((food, price, m))
        p.ask("simple", (f"{{n}}去哪家店吃的{food}？", f"{{n}}吃{food}是在哪家店？"), place, m)
    if len(had) == 2 and had[0][1] != had[1][1]:
        (a, pa, ma), (b, pb, mb) = had
        p.ask("comparative", (f"{{n}}吃的{a}和{b}哪顿人均更贵？",), a if pa > pb else b, ma, mb)


def _hobby(p: Person) -> None:
    rng = p.rng
    hobby = rng.choice(sorted(HOBBIES))
    places, text, question = HOBBIES[hobby]
    place = rng.choice(places)
    m = p.say((text, (17, 22)), rng.randrange(p.days), place=place, k=rng.randint(2, 4))
    p.ask("simple", (question,), place, m)


def _work(p: Person) -> None:
    rng = p.rng
    company, job = rng.choice(COMPANIES), rng.choice(JOBS)
    m = p.say(rng.choice(WORK), rng.randrange(p.days), company=company, job=job,
              years=NUMERALS[rng.randint(2, 8)])
    p.subject(("work", company, job), (f"在{company}当{job}的那位", f"{company}做{job}的那位"), m)
    p.ask("simple", ("{n}是做什么工作的？", "{n}是干哪行的？"), job, m)
    p.ask("simple", ("{n}在哪家公司上班？",), company, m)


class Names:
    """Full names, unique in the file and none inside another (张伟 beside 张伟华 would
    make a question about 张伟 match both), from shared surnames and given names."""

    def __init__(self, rng: random.Random) -> None:
        self.rng, self.used = rng, list[str]()

    def new(self, surname: str, given: tuple[str, ...]) -> str:
        """A name of ``surname`` (once its given names run out, of another surname: a child
        who has the mother's)."""
        for tries in range(1000):
            if tries >= 50:
                surname = self.rng.choice(SURNAMES)
            name = surname + self.rng.choice(given)
            if all(name not in u and u not in name for u in self.used):
                self.used.append(name)
                return name
        raise AssertionError(f"no name left of {given}")


def make_person(rng: random.Random, names: Names, number: int, voice: str = "named") -> Person:
    """One person's life. ``voice="first"``: the person tells it as 我 and says their name
    once, in a message introducing themself (the questions still name them)."""
    # a few surnames carry most people, as in China (王, 李, 张 ...)
    surname = rng.choices(SURNAMES, weights=[1 / (i + 3) for i in range(len(SURNAMES))])[0]
    start = FIRST_DAY + timedelta(days=rng.randint(0, 45))
    p = Person(f"p{number:03d}", names.new(surname, GIVEN), rng.choice(CITIES), start,
               rng.randint(100, 140), random.Random(rng.random()), voice=voice)
    kinds = rng.sample(SERIES, 2)
    # mostly with more of the same in other months: the questions ask about one month
    _series(p, kinds[0], rng.randint(4, 8), ask=True, extra=rng.choice((0, 1, 1, 2, 2)))
    minor = rng.choice((0, 0, 0, 0, 2))
    if minor:
        _series(p, kinds[1], minor, ask=False)
    _purchases(p, rng.choice((1, 1, 2, 2, 3)))
    cities: set[str] = set()
    if rng.random() < 0.4:
        _trip(p, cities)
    if rng.random() < 0.3:
        _holiday(p, cities)
    if rng.random() < 0.3:
        _doctor(p)
    if rng.random() < 0.25:
        _checkup(p)
    if rng.random() < 0.3:
        _weight(p)
    if rng.random() < 0.45:
        _children(p, surname, names)
    _appointments(p, rng.choice((0, 1, 1, 2)))
    if rng.random() < 0.4:
        _meals(p, rng.choice((1, 2)))
    if rng.random() < 0.4:
        _hobby(p)
    if rng.random() < 0.4:
        _work(p)
    for _ in range(rng.choice((0, 1))):
        p.say((rng.choice(NAMED_CHATTER), (8, 23)), rng.randrange(p.days))
    for _ in range(rng.choice((0, 0, 1, 1, 2))):
        p.say((rng.choice(CHATTER), (7, 23)), rng.randrange(p.days))
    if voice == "first":
        p.say(p.rng.choice(INTRODUCTION), 0, name=p.name, city=p.city)
    p.messages.sort(key=lambda m: m.when)
    for mid, m in enumerate(p.messages):
        m.mid = mid
    p.asked = p.messages[-1].when + timedelta(days=p.rng.randint(1, 10), hours=1)
    for d in p.drafts:
        if d.month:  # "this month" or "last month" when it is, else the month by number
            relative = {0: "这个月", 1: "上个月"}.get(p.asked.month - d.month)
            d.text = d.text.replace("{month}", relative if relative and p.rng.random() < 0.6
                                    else f"{d.month}月份")
    return p
