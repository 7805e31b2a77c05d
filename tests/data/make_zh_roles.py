"""Write ``zh_roles.json``: people an assistant's users know, told one message at a time.

A set of the MemDaily kind built to be hard the way pooled MemDaily files are (see
``README.md`` next to this file): each pool holds 8-12 users' trajectories in one namespace,
every user talks about three or four people (relatives, friends, colleagues) whose attributes
come from shared lists (ages, birthdays, hometowns, work cities, jobs), a person's name links
facts said in separate messages, and questions ask by relation or condition, not by name.

Every question names its gold messages by construction and is checked here: each gold message
names the person it is about and holds the fact the question needs (its rendered value); a
question whose relation or condition also fits a person of another trajectory of the pool is
not written (it would have two right answers in the pooled namespace).

Deterministic: ``python tests/data/make_zh_roles.py`` writes the same bytes every time
(``tests/eval/test_zh_roles.py`` checks the committed file against it).
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

SEED = 22
OUT = Path(__file__).resolve().parent / "zh_roles.json"
KINDS = ("simple", "conditional", "comparative", "aggregative", "post_processing", "noisy")
POOLS_PER_KIND = 2
QUESTIONS_PER_TRAJECTORY = 3
WEEKDAYS = "一二三四五六日"


def _words(text: str) -> list[str]:
    return text.split()


# relation -> (group, sex, youngest, oldest)
RELATIONS: dict[str, tuple[str, str, int, int]] = {
    "表哥": ("亲戚", "m", 28, 42), "表姐": ("亲戚", "f", 27, 40), "堂弟": ("亲戚", "m", 19, 30),
    "堂妹": ("亲戚", "f", 18, 29), "舅舅": ("亲戚", "m", 45, 62), "姑姑": ("亲戚", "f", 44, 60),
    "小姨": ("亲戚", "f", 36, 50), "大伯": ("亲戚", "m", 52, 68), "表妹": ("亲戚", "f", 20, 31),
    "姐夫": ("亲戚", "m", 30, 45),
    "发小": ("朋友", "m", 26, 36), "大学同学": ("朋友", "f", 25, 35),
    "高中同学": ("朋友", "m", 24, 36), "闺蜜": ("朋友", "f", 24, 35),
    "大学室友": ("朋友", "m", 25, 34), "球友": ("朋友", "m", 27, 48),
    "同事": ("同事", "f", 24, 45), "领导": ("同事", "m", 35, 52), "组长": ("同事", "f", 30, 42),
    "新来的同事": ("同事", "m", 22, 28), "前同事": ("同事", "f", 26, 40),
}
SURNAMES = ("周吴郑王冯陈褚卫蒋沈韩杨朱秦许何吕施张孔曹严华金魏陶姜谢邹喻柏窦章苏潘葛"
            "范彭鲁马方俞任袁柳唐罗薛贺倪汤殷毕郝邬安常乐于傅齐康伍余顾孟黄穆萧尹姚邵"
            "汪祁毛狄米贝明臧戴宋庞熊纪舒屈项祝董梁杜阮蓝闵季贾路江童颜郭梅盛林钟徐邱"
            "骆高夏蔡田胡凌霍虞万卢莫房解应宗丁宣邓洪包左石崔龚程邢裴陆荣翁")
GIVEN_M = _words("建国 志强 海涛 俊杰 文博 浩然 子轩 宇航 明辉 振华 "
                  "国庆 立军 家豪 晓东 鹏飞 天佑 德明 永刚 嘉诚 思远 "
                  "一鸣 卫东 博文 瑞祥 承志 泽宇 启航 春生")
GIVEN_F = _words("慧敏 梦琪 雅婷 秀英 丽华 佳怡 晓燕 诗涵 欣怡 婉清 "
                  "玉兰 美玲 静怡 雨桐 若曦 凤霞 海燕 红梅 思琪 晨曦 "
                  "嘉欣 淑芬 子萱 一诺 月华 巧玲 冬梅 秋月")
CITIES = _words("宁波 杭州 苏州 南京 合肥 武汉 长沙 成都 重庆 西安 "
                 "郑州 青岛 厦门 广州 深圳 昆明 天津 大连 济南 福州")
HOMETOWNS = _words("赣州 绍兴 温州 洛阳 襄阳 衡阳 潍坊 泉州 绵阳 宜宾 "
                    "九江 常德 南阳 盐城 宝鸡 柳州 遵义 营口 蚌埠 丽水")
# job -> ways to say someone does it ({n} the name, {c} the work city)
JOBS: dict[str, tuple[str, ...]] = {
    "老师": (
        "{n}在{c}一所中学教数学",
        "{n}是老师，在{c}教小学语文",
        "{n}在{c}当英语老师，天天批作业",
    ),
    "护士": (
        "{n}在{c}的医院当护士，经常上夜班",
        "{n}是护士，在{c}一家三甲医院",
        "{n}在{c}做护士好几年了",
    ),
    "医生": (
        "{n}在{c}当医生，心内科的",
        "{n}是{c}一家医院的牙医",
        "{n}在{c}的医院上班，是骨科大夫",
    ),
    "程序员": (
        "{n}在{c}写代码，做后端的",
        "{n}是程序员，在{c}一家互联网公司",
        "{n}在{c}搞开发，天天加班",
    ),
    "会计": (
        "{n}在{c}一家公司做会计",
        "{n}在{c}当会计，月底特别忙",
        "{n}是会计，在{c}的事务所",
    ),
    "律师": (
        "{n}在{c}的律所当律师",
        "{n}是律师，在{c}专门打离婚官司",
        "{n}在{c}做律师，挺能说的",
    ),
    "销售": (
        "{n}在{c}跑销售，卖医疗器械",
        "{n}在{c}做汽车销售",
        "{n}是销售，常年在{c}出差见客户",
    ),
    "设计师": (
        "{n}在{c}做平面设计",
        "{n}是室内设计师，在{c}接装修的活",
        "{n}在{c}一家广告公司做设计",
    ),
    "厨师": (
        "{n}在{c}一家饭店当厨师",
        "{n}是厨师，在{c}做川菜",
        "{n}在{c}开了个小馆子自己掌勺",
    ),
    "警察": (
        "{n}在{c}当警察，派出所的",
        "{n}是{c}的交警",
        "{n}在{c}公安局上班",
    ),
    "公务员": (
        "{n}在{c}考上了公务员，在税务局",
        "{n}在{c}的街道办上班，算公务员",
        "{n}是{c}的公务员，工作挺稳定",
    ),
    "工程师": (
        "{n}在{c}一家车企当工程师",
        "{n}在{c}做土木工程师，常跑工地",
        "{n}是工程师，在{c}的电厂",
    ),
}
CHATTER = (
    "今天又加班到九点，累死了", "晚饭点了份麻辣烫，有点咸", "周末想去爬山，不知道天气怎么样",
    "最近睡得不太好，半夜老醒", "下雨了，出门忘带伞", "刚看完一部电影，还挺感人的",
    "地铁上人好多，挤得不行", "今天早上差点迟到", "想换个手机，现在这个太卡了",
    "楼下新开了家奶茶店，排了好长的队", "感冒好像快好了", "这两天降温，穿少了",
    "中午在公司楼下吃的黄焖鸡", "想报个游泳班", "快递又被放错柜子了",
    "晚上跑了五公里，腿有点酸", "家里的绿萝好像要死了", "今天股票又跌了，心累",
    "好想出去旅游啊", "刚把房租交了", "猫把我的耳机线咬断了", "老板今天心情不错",
    "明天要早起，先睡了", "最近在追一部古装剧", "周五终于到了", "今天路上堵了一个小时",
)
# a mention of someone by relation only: shares the question's words, holds no fact
RELATION_CHATTER = (
    "我{r}今天给我发了好多搞笑视频", "我{r}说下周请我吃饭", "刚跟我{r}打了半小时电话",
    "我{r}最近在学开车，老挂科", "我{r}又在朋友圈晒娃了", "我{r}推荐我看一本书",
)
NOISE_BEFORE = ("刚下班，地铁上挤死了。对了，", "今天好热啊，空调都不管用。说起来，",
                "晚上吃撑了，在小区里走两圈。顺便记一下，", "唉，又是忙到飞起的一天。对了，",
                "外卖还没到，饿得前胸贴后背。突然想起来，", "刚洗完澡，头发还没干。跟你说个事，")
NOISE_AFTER = ("，你帮我记着点", "，哈哈我差点忘了", "，不说了我去做饭了", "，别的也没啥",
               "，这事我老记不住", "，好了我先去洗碗")


@dataclass
class Person:
    name: str
    relation: str
    age: int
    birthday: tuple[int, int]
    hometown: str
    city: str
    job: str

    @property
    def group(self) -> str:
        return RELATIONS[self.relation][0]


@dataclass
class Message:
    text: str
    facts: set[tuple[str, str]] = field(default_factory=set)  # (person name, attribute)
    checks: list[str] = field(default_factory=list)  # substrings the fact needs


@dataclass
class Trajectory:
    tid: str
    people: list[Person]
    messages: list[Message] = field(default_factory=list)
    questions: list[dict[str, Any]] = field(default_factory=list)

    def where(self, name: str, attribute: str) -> list[int]:
        return [i for i, m in enumerate(self.messages) if (name, attribute) in m.facts]


class Names:
    def __init__(self, rng: random.Random) -> None:
        self.rng, self.used = rng, set[str]()

    def new(self, sex: str) -> str:
        while True:
            name = self.rng.choice(SURNAMES) + self.rng.choice(GIVEN_M if sex == "m" else GIVEN_F)
            if name not in self.used:
                self.used.add(name)
                return name


def _person(rng: random.Random, names: Names, relation: str) -> Person:
    _, sex, low, high = RELATIONS[relation]
    return Person(names.new(sex), relation, rng.randint(low, high),
                  (rng.randint(1, 12), rng.randint(1, 28)), rng.choice(HOMETOWNS),
                  rng.choice(CITIES), rng.choice(list(JOBS)))


# -- saying things ------------------------------------------------------------------------


class Voice:
    """One user's way of saying things: each phrasing comes round again only once the others
    of its family have been used (nobody says every fact the same way)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng, self.left = rng, dict[str, list[int]]()

    def pick(self, family: str, options: tuple[str, ...]) -> str:
        left = self.left.get(family)
        if not left:
            left = self.left[family] = self.rng.sample(range(len(options)), len(options))
        return options[left.pop()]


def _intro(voice: Voice, p: Person) -> Message:
    n, r = p.name, p.relation
    text = voice.pick("intro", (f"我{r}叫{n}", f"跟你说下，{n}是我{r}", f"我有个{r}，名字叫{n}",
                       f"{n}是我{r}，我们关系一直挺好的", f"我{r}{n}前两天来我家吃饭了",
                       f"你记一下，我{r}的名字是{n}"))
    return Message(text, {(n, "relation")}, [n, r])


def _fact(voice: Voice, p: Person, attribute: str) -> Message:
    n = p.name
    if attribute == "age":
        a = p.age
        text = voice.pick("age", (f"{n}今年{a}岁", f"{n}今年{a}了，看着倒挺年轻",
                           f"{n}刚过完{a}岁生日没多久", f"{n}都{a}了还天天熬夜打游戏"))
        return Message(text, {(n, "age")}, [n, str(a)])
    if attribute == "birthday":
        m, d = p.birthday
        text = voice.pick("birthday", (
            f"{n}生日是{m}月{d}号", f"{n}的生日在{m}月{d}日，到时候提醒我",
            f"{n}是{m}月{d}号过生日", f"记一下，{n}生日{m}月{d}号"))
        return Message(text, {(n, "birthday")}, [n, f"{m}月{d}"])
    if attribute == "hometown":
        h = p.hometown
        text = voice.pick("hometown", (f"{n}老家是{h}的", f"{n}是{h}人，说话口音挺重",
                           f"{n}从小在{h}长大", f"{n}过年要回{h}老家"))
        return Message(text, {(n, "hometown")}, [n, h])
    if attribute == "work":  # city and job in one breath, the way people say it
        text = voice.pick(p.job, JOBS[p.job]).format(n=n, c=p.city)
        return Message(text, {(n, "city"), (n, "job")}, [n, p.city])
    raise ValueError(attribute)


def _noisy(voice: Voice, message: Message) -> Message:
    """The fact wrapped in chatter, as people tell things in passing."""
    text = voice.pick("before", NOISE_BEFORE) + message.text + voice.pick("after", NOISE_AFTER)
    return Message(text, message.facts, message.checks)


# -- a user's trajectory --------------------------------------------------------------------


Shared = tuple[str, str, str]  # (group, "job" or "city", value)


def _trajectory(rng: random.Random, names: Names, tid: str, kind: str,
                shared: Shared | None = None, avoid: frozenset[Shared] = frozenset()
                ) -> Trajectory:
    """One user's messages. ``shared``: two or three people of a group share a job or a work
    city (the aggregative questions); ``avoid``: what the user's other people must not share
    (the values other users of the pool plant)."""
    relations = rng.sample(list(RELATIONS), rng.randint(3, 4))
    people = [_person(rng, names, r) for r in relations]
    planted: list[Person] = []
    if shared is not None:
        group, key, value = shared
        same = [r for r in RELATIONS if RELATIONS[r][0] == group]
        for r in rng.sample(same, rng.randint(2, 3)):
            p = _person(rng, names, r)
            setattr(p, key, value)
            planted.append(p)
        kept = [p for p in people if p.relation not in {q.relation for q in planted}]
        people = kept[:max(1, 4 - len(planted))] + planted
        rng.shuffle(people)
    for p in people:
        while p not in planted and ((p.group, "job", p.job) in avoid
                                    or (p.group, "city", p.city) in avoid):
            p.job, p.city = rng.choice(list(JOBS)), rng.choice(CITIES)
    t = Trajectory(tid, people)
    voice = Voice(rng)
    queues: list[list[Message]] = []
    for p in people:
        # three of the four things about a person are said, in any order, after who they are
        # (an aggregative user always says where the people they count work, and as what)
        attributes = rng.sample(("age", "birthday", "hometown", "work"), 3)
        if p in planted and "work" not in attributes:
            attributes[0] = "work"
        said = [_intro(voice, p), *(_fact(voice, p, attribute) for attribute in attributes)]
        if kind == "noisy":
            said = [_noisy(voice, m) if rng.random() < 0.7 else m for m in said]
        queues.append(said)
    # facts of different people interleave
    order: list[Message] = []
    while any(queues):
        queue = rng.choice([q for q in queues if q])
        order.append(queue.pop(0))
    for chatter in rng.sample(CHATTER, rng.randint(2, 4)):
        order.insert(rng.randrange(len(order) + 1), Message(chatter))
    r = rng.choice(people).relation
    order.insert(rng.randrange(len(order) + 1),
                 Message(rng.choice(RELATION_CHATTER).format(r=r)))
    t.messages = order
    return t


# -- questions -------------------------------------------------------------------------------

Fits = Callable[[Person], bool]


@dataclass
class Draft:
    text: str
    answer: str
    needs: list[tuple[Person, str]]  # (person, attribute) facts the answer needs
    # what the question picks people by (``want`` of the user's own people fit): another
    # user of the pool with someone who fits would have a right answer too
    fits: Fits | None
    want: int
    # "my r1 and my r2": ambiguous when another user of the pool has both
    pair: tuple[str, str] | None = None
    shape: str = ""  # a user is asked each shape of question once


def _drafts(rng: random.Random, t: Trajectory, kind: str) -> list[Draft]:
    ps = t.people
    out: list[Draft] = []

    def say(*options: str) -> str:
        return rng.choice(options)

    if kind in ("simple", "noisy"):
        for p in ps:
            rel, n = p.relation, p.name
            out.append(Draft(say(f"我{rel}叫什么名字？", f"我{rel}叫啥来着？",
                                 f"我{rel}的名字你还记得吗？"),
                             n, [(p, "relation")], _is(rel), 1, shape="name"))
            out.append(Draft(say(f"{n}老家是哪里的？", f"{n}是哪里人？"), p.hometown,
                             [(p, "hometown")], None, 1, shape="hometown"))
            out.append(Draft(say(f"{n}生日是几月几号？", f"{n}哪天过生日？"),
                             f"{p.birthday[0]}月{p.birthday[1]}日", [(p, "birthday")], None, 1,
                             shape="birthday"))
            out.append(Draft(say(f"{n}是干什么的？", f"{n}做的什么工作？"), p.job,
                             [(p, "job")], None, 1, shape="job"))
            out.append(Draft(say(f"{n}现在在哪个城市上班？", f"{n}在哪工作来着？"), p.city,
                             [(p, "city")], None, 1, shape="city"))
    if kind in ("conditional", "noisy"):
        for p in ps:
            g = p.group
            for cond, fits, fact in (
                    (say(f"在{p.city}工作的", f"在{p.city}上班的"),
                     _and(_group(g), _city(p.city)), "city"),
                    (say(f"老家{p.hometown}的", f"{p.hometown}来的"),
                     _and(_group(g), _home(p.hometown)), "hometown"),
                    (f"当{p.job}的", _and(_group(g), _job(p.job)), "job")):
                out.append(Draft(say(f"我那个{cond}{g}叫什么？", f"我{g}里{cond}是谁来着？"),
                                 p.name, [(p, fact), (p, "relation")], fits, 1,
                                 shape=f"name-by-{fact}"))
                out.append(Draft(say(f"我那个{cond}{g}多大了？", f"我那个{cond}{g}今年几岁？"),
                                 str(p.age), [(p, fact), (p, "relation"), (p, "age")], fits, 1,
                                 shape=f"age-by-{fact}"))
                out.append(Draft(f"我那个{cond}{g}生日是哪天？",
                                 f"{p.birthday[0]}月{p.birthday[1]}日",
                                 [(p, fact), (p, "relation"), (p, "birthday")], fits, 1,
                                 shape=f"birthday-by-{fact}"))
    if kind == "comparative":
        for i, a in enumerate(ps):
            for b in ps[i + 1:]:
                if a.relation in b.relation or b.relation in a.relation:
                    continue
                if rng.random() < 0.5:
                    a, b = b, a
                pair = (a.relation, b.relation)
                if a.age != b.age:
                    older = a if a.age > b.age else b
                    out.append(Draft(say(f"我{a.relation}和我{b.relation}谁年纪大？",
                                         f"我{a.relation}跟{b.relation}比，谁岁数大些？"),
                                     older.name,
                                     [(a, "relation"), (a, "age"), (b, "relation"), (b, "age")],
                                     None, 1, pair, "age"))
                if a.birthday != b.birthday:
                    first = a if a.birthday < b.birthday else b
                    out.append(Draft(say(f"我{a.relation}和{b.relation}谁的生日在前面？",
                                         f"一年里是我{a.relation}先过生日还是{b.relation}先过？"),
                                     first.name, [(a, "relation"), (a, "birthday"),
                                                  (b, "relation"), (b, "birthday")],
                                     None, 1, pair, "birthday"))
                if a.hometown == b.hometown:
                    continue
                out.append(Draft(f"我{a.relation}和{b.relation}是老乡吗？", "不是",
                                 [(a, "relation"), (a, "hometown"), (b, "relation"),
                                  (b, "hometown")], None, 1, pair, "hometown"))
    if kind == "aggregative":
        for group in ("亲戚", "朋友", "同事"):
            members = [p for p in ps if p.group == group]
            for label, key in (("是{v}", "job"), ("在{v}工作", "city")):
                for v in sorted({getattr(p, key) for p in members}):
                    hits = [p for p in members if getattr(p, key) == v]
                    if len(hits) < 2:
                        continue
                    what = label.format(v=v)
                    needs = [(p, f) for p in hits for f in ("relation", key)]
                    fits = _and(_group(group), _job(v) if key == "job" else _city(v))
                    out.append(Draft(say(f"我有几个{group}{what}？",
                                         f"我{group}里头有几个{what}的？"),
                                     str(len(hits)), needs, fits, len(hits), shape="count"))
                    out.append(Draft(say(f"我{group}里{what}的都有谁？",
                                         f"我哪几个{group}{what}？"),
                                     "、".join(p.name for p in hits), needs, fits, len(hits),
                                     shape="list"))
    if kind == "post_processing":
        for p in ps:
            rel = p.relation
            out.append(Draft(say(f"我{rel}明年就多少岁了？", f"再过两年我{rel}多大？"),
                             "", [(p, "relation"), (p, "age")], _is(rel), 1, shape="older"))
            last = out[-1]
            last.answer = str(p.age + (1 if "明年" in last.text else 2))
            season = "冬冬春春春夏夏夏秋秋秋冬"[p.birthday[0] - 1]
            text = say(f"我{rel}是哪个季节过生日？", f"我{rel}的生日是在冬天吗？")
            answer = f"{season}天" if "哪个" in text else "是" if season == "冬" \
                else f"不是，{season}天"
            out.append(Draft(text, answer, [(p, "relation"), (p, "birthday")], _is(rel), 1,
                             shape="season"))
            for q in ps:
                if q is not p and p.age > q.age and q.relation not in rel \
                        and rel not in q.relation:
                    out.append(Draft(f"我{rel}比我{q.relation}大几岁？", str(p.age - q.age),
                                     [(p, "relation"), (p, "age"), (q, "relation"),
                                      (q, "age")], None, 1, (rel, q.relation), "difference"))
    rng.shuffle(out)
    return out


def _is(relation: str) -> Fits:
    return lambda p: p.relation == relation


def _group(group: str) -> Fits:
    return lambda p: p.group == group


def _city(city: str) -> Fits:
    return lambda p: p.city == city


def _home(town: str) -> Fits:
    return lambda p: p.hometown == town


def _job(job: str) -> Fits:
    return lambda p: p.job == job


def _and(a: Fits, b: Fits) -> Fits:
    return lambda p: a(p) and b(p)


def _ask(rng: random.Random, pool: list[Trajectory], kind: str, asked: set[str]) -> None:
    for t in pool:
        others = [p for o in pool if o is not t for p in o.people]
        relations = [{p.relation for p in o.people} for o in pool if o is not t]
        shapes: set[str] = set()
        for d in _drafts(rng, t, kind):
            if len(t.questions) == QUESTIONS_PER_TRAJECTORY:
                break
            if d.text in asked or d.shape in shapes \
                    or not all(t.where(p.name, a) for p, a in d.needs):
                continue
            if d.pair is not None and any(set(d.pair) <= r for r in relations):
                continue
            if d.fits is not None and (any(d.fits(p) for p in others)
                                       or sum(map(d.fits, t.people)) != d.want):
                continue
            gold = sorted({i for p, a in d.needs for i in t.where(p.name, a)})
            asked.add(d.text)
            shapes.add(d.shape)
            t.questions.append({"qid": len(t.questions), "question": d.text,
                                "answer": d.answer, "target_step_id": gold, "kind": kind,
                                "_needs": [(p.name, a) for p, a in d.needs]})


# -- the file --------------------------------------------------------------------------------


def _stamp(when: datetime) -> str:
    weekday = "周" + WEEKDAYS[when.weekday()]
    return when.strftime("%Y年%m月%d日 ") + weekday + when.strftime(" %H:%M")


PLACES = ("家里", "公司", "地铁上", "咖啡店", "小区楼下", "出租车上", "健身房", "食堂")


def _render(rng: random.Random, t: Trajectory) -> dict[str, Any]:
    when = datetime(2024, 1, 1) + timedelta(days=rng.randint(0, 300), hours=rng.randint(7, 12))
    messages = []
    for mid, m in enumerate(t.messages):
        when += timedelta(hours=rng.randint(2, 60), minutes=rng.randint(0, 59))
        messages.append({"mid": mid, "message": m.text, "time": _stamp(when),
                         "place": rng.choice(PLACES)})
    asked_at = _stamp(when + timedelta(days=rng.randint(1, 20)))
    questions = [{k: v for k, v in q.items() if not k.startswith("_")} | {"time": asked_at}
                 for q in t.questions]
    return {"tid": t.tid, "message_list": messages, "question_list": questions}


def build() -> dict[str, dict[str, list[dict[str, Any]]]]:
    """The whole set: ``{kind: {"roles_N": [trajectory, ...]}}``, checked."""
    rng = random.Random(SEED)
    names = Names(rng)
    data: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for kind in KINDS:
        data[kind] = {}
        for number in range(1, POOLS_PER_KIND + 1):
            size = rng.randint(7, 9)
            shared: list[Shared | None] = [None] * size
            if kind == "aggregative":  # a different group and value planted per user
                jobs, cities = rng.sample(list(JOBS), size), rng.sample(CITIES, size)
                for i in range(size):
                    key = rng.choice(("job", "city"))
                    shared[i] = (rng.choice(("亲戚", "朋友", "同事")), key,
                                 jobs[i] if key == "job" else cities[i])
            planted = [s for s in shared if s is not None]
            pool = [_trajectory(rng, names, f"{kind[:4]}{number}-{i:02d}", kind, shared[i],
                                frozenset(s for s in planted if s != shared[i]))
                    for i in range(size)]
            _ask(rng, pool, kind, set())
            _check(pool)
            data[kind][f"roles_{number}"] = [_render(rng, t) for t in pool]
    return data


def _check(pool: list[Trajectory]) -> None:
    """Every gold message holds the fact it is gold for (the person's name and the value)."""
    for t in pool:
        for q in t.questions:
            needed = q["_needs"]
            for name, attribute in needed:
                found = t.where(name, attribute)
                assert found, (t.tid, q["question"], name, attribute)
                for i in found:
                    m = t.messages[i]
                    assert all(c in m.text for c in m.checks), (m.text, m.checks)
                    assert name in m.text, (m.text, name)
            assert set(q["target_step_id"]) == {i for n, a in needed for i in t.where(n, a)}


def main() -> int:
    text = json.dumps(build(), ensure_ascii=False, indent=1) + "\n"
    if "--check" in sys.argv:
        return 0 if OUT.read_text(encoding="utf-8") == text else 1
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
