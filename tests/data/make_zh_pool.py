"""Write ``zh_pool``: one large pool of 250 people's daily lives, in the MemDaily layout.

A development pool shaped like the large pooled MemDaily files (issue 36, "Chinese measured
natively"; see ``README.md`` next to this file): the whole file is one namespace of 250
trajectories and 4,350 messages, one person's daily life each (coffee, taxis, takeaway, the
gym, purchases, trips, doctors, children, appointments, meals out, hobbies, work), said in the
same shared phrasings with the same shops, dishes, cities and price ranges, so the pool is full
of near-alike messages of different people; people share surnames and given names, some only
by sound (徐伟, 徐炜; 胡炜, 胡玮). 600 questions, 100 of each MemDaily type:

* ``simple``: one fact of a named person (one message);
* ``conditional``: a fact picked by another, of a named person (the hotel of the trip to 成都)
  or of the one person a condition fits (在云帆网络当数据分析师的那位, 5月3号去面试的那位);
* ``comparative``: two facts of a person compared;
* ``aggregative``: every time a person did something (counts, sums, lists): mostly within one
  month (这个月, 上个月, 4月份) while the same person did it in other months too; 4-8 gold;
* ``post_processing``: arithmetic or the calendar over one or two facts;
* ``noisy``: a simple or conditional question wrapped in chatter, often with a typo.

Every fact message names its person, so a question that names a person, or a condition only
one person fits, has one right answer in the pooled namespace; its gold is every message whose
fact the answer needs (a condition's too), known by construction and checked here: each gold
message holds the values as said and its person's name (or their child's, whose introduction
is gold too); no name occurs in another person's trajectory; a condition fits one person of
the pool; no question text repeats; a month-scoped question's gold is all and only the month's.

Standard library only, seeded and deterministic: ``python tests/data/make_zh_pool.py OUT``
writes the same bytes every time (``tests/eval/test_zh_pool.py`` pins their SHA-256), in a
third of a second; the file (0.9 MB) is generated where it is needed, not committed.
"""

from __future__ import annotations

import hashlib
import json
import random
import string
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import zip_longest
from pathlib import Path
from typing import Any

SEED = 36
PEOPLE = 250
KINDS = ("simple", "conditional", "comparative", "aggregative", "post_processing", "noisy")
QUOTA = 100  # questions of each kind
MAX_QUESTIONS = 3  # per person
FIRST_DAY = datetime(2024, 3, 1)
WEEKDAYS = "一二三四五六日"
NUMERALS = "零一两三四五六七八九十"
Hours = tuple[int, int]
Template = tuple[str, Hours]


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# -- names: a few surnames carry most people, given names recur ------------------------------

# the rarer surnames at the end sound like common ones (章/张, 汪/王, 黎/李, 柳/刘, 伍/吴)
SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何林罗郑梁谢宋唐许韩冯邓曹彭曾田董袁潘蔡蒋余杜叶程" \
    "章汪黎柳伍"
GIVEN = _words("伟 芳 娜 敏 静 丽 强 磊 军 洋 勇 艳 杰 娟 涛 超 霞 平 刚 婷 "
               "玮 炜 婧 莉 君 洁 韬 蕾 "
               "建国 志强 海涛 俊杰 浩然 子轩 宇航 明辉 晓东 鹏飞 嘉豪 思远 一鸣 博文 "
               "秀英 桂英 丽华 佳怡 晓燕 雅婷 欣怡 婉清 玉兰 美玲 静怡 雨桐 梦琪 思琪 红梅")
CHILD_GIVEN = {"儿子": _words("子涵 浩宇 俊熙 雨泽 沐阳 宇轩 睿泽 天佑 奕辰 明轩 锦程 一诺"),
               "女儿": _words("可欣 梓萱 欣妍 语桐 若汐 紫涵 诗雨 嘉怡 悦然 安琪 思彤 乐瑶")}
CITIES = _words("北京 上海 广州 深圳 杭州 成都 武汉 南京 西安 重庆 苏州 长沙 天津 郑州 青岛 "
                "厦门 昆明 合肥")

# -- repeated events (the aggregative questions) ---------------------------------------------


@dataclass(frozen=True)
class Series:
    """An event a person repeats: its phrasings, how a value is drawn, and its questions."""

    name: str
    templates: tuple[Template, ...]
    values: dict[str, tuple[Any, ...]]  # field -> choices
    count_q: tuple[str, ...]
    total: tuple[str, str, tuple[str, ...]] | None = None  # (field, unit, questions)
    listed: tuple[str, tuple[str, ...]] | None = None  # (field, questions), distinct values


def _prices(low: int, high: int, step: int = 1) -> tuple[int, ...]:
    return tuple(range(low, high + 1, step))


SERIES = (
    Series("coffee", (
        ("{n}早上在{shop}买了杯{drink}，{price}块", (8, 10)),
        ("{n}下午犯困，去{shop}买了杯{drink}，花了{price}元", (14, 16)),
        ("{n}今天又买咖啡了，{shop}的{drink}，{price}块钱", (9, 17)),
        ("{n}用优惠券在{shop}买了杯{drink}，才{price}块", (8, 18)),
        ("{n}开会前去{shop}带了杯{drink}，{price}元", (9, 15)),
        ("{n}在{shop}点了一杯{drink}，付了{price}", (10, 17)),
    ), {"shop": _words("瑞幸 星巴克 库迪 Manner 楼下便利店 Tims 幸运咖"),
        "drink": _words("生椰拿铁 冰美式 燕麦拿铁 澳白 厚乳拿铁 焦糖玛奇朵 热美式 摩卡"),
        "price": _prices(9, 38)},
        ("{n}一共买过几次咖啡？", "{n}这段时间买了几杯咖啡？", "{n}买咖啡买了多少回？"),
        ("price", "元", ("{n}买咖啡一共花了多少钱？", "{n}这阵子在咖啡上花了多少钱？")),
        ("shop", ("{n}都在哪些店买过咖啡？", "{n}买咖啡去过哪几家店？"))),
    Series("milk_tea", (
        ("{n}下午在{shop}买了杯{drink}，{price}块", (13, 17)),
        ("{n}又没忍住，点了杯{shop}的{drink}，{price}元", (14, 21)),
        ("{n}路过{shop}，买了杯{drink}，花了{price}", (12, 20)),
        ("{n}在{shop}排队买了杯{drink}，{price}块钱", (13, 20)),
        ("{n}今天买的是{shop}的{drink}，{price}块", (12, 21)),
    ), {"shop": _words("喜茶 蜜雪冰城 茶百道 霸王茶姬 古茗 一点点 沪上阿姨"),
        "drink": _words("珍珠奶茶 芋泥波波奶茶 伯牙绝弦 生椰奶茶 茉莉奶绿 黑糖珍珠奶茶 "
                        "四季春奶茶 厚乳奶茶"),
        "price": _prices(6, 28)},
        ("{n}买过几次奶茶？", "{n}这段时间一共买了几杯奶茶？"),
        ("price", "元", ("{n}买奶茶一共花了多少钱？", "{n}喝奶茶总共花了多少？")),
        ("shop", ("{n}都在哪几家店买过奶茶？",))),
    Series("taxi", (
        ("{n}从公司打车去{dest}，{price}块", (9, 19)),
        ("{n}下雨没带伞，打车去了{dest}，车费{price}元", (8, 21)),
        ("{n}叫了个滴滴去{dest}，花了{price}", (7, 22)),
        ("{n}赶时间，打车到{dest}，{price}块钱", (7, 20)),
        ("{n}晚上打车回家，{price}块", (20, 23)),
    ), {"dest": _words("高铁站 机场 医院 万达广场 客户公司 朋友家 火车站 市图书馆 体育馆"),
        "price": _prices(14, 96)},
        ("{n}一共打过几次车？", "{n}这段时间打了几回车？"),
        ("price", "元", ("{n}打车总共花了多少钱？", "{n}的打车费加起来是多少？"))),
    Series("gym", (
        ("{n}晚上去健身房练了{minutes}分钟{part}", (19, 21)),
        ("{n}下班去撸铁，今天练{part}，练了{minutes}分钟", (18, 21)),
        ("{n}在健身房待了{minutes}分钟，主要练{part}", (17, 21)),
        ("{n}今天健身房打卡，{part}练了{minutes}分钟", (12, 21)),
    ), {"part": _words("腿 胸 背 肩 手臂 核心 臀"), "minutes": _prices(40, 120, 5)},
        ("{n}去了几次健身房？", "{n}一共去健身房练了几回？"),
        ("minutes", "分钟", ("{n}在健身房一共练了多少分钟？",)),
        ("part", ("{n}在健身房都练过哪些部位？",))),
    Series("running", (
        ("{n}早上跑了{km}公里，出了一身汗", (6, 8)),
        ("{n}晚上沿着江边跑了{km}公里", (19, 21)),
        ("{n}今天晨跑{km}公里，配速还行", (6, 8)),
        ("{n}下班在小区里慢跑了{km}公里", (19, 22)),
        ("{n}去操场跑步，跑了{km}公里，腿有点酸", (17, 21)),
    ), {"km": _prices(3, 12)},
        ("{n}跑了几次步？", "{n}一共跑过几回步？"),
        ("km", "公里", ("{n}一共跑了多少公里？", "{n}跑步加起来跑了多少公里？"))),
    Series("takeaway", (
        ("{n}中午点了份{dish}外卖，{price}块", (11, 13)),
        ("{n}懒得做饭，叫了份{dish}外卖，花了{price}", (18, 20)),
        ("{n}晚上在美团上点了{dish}，{price}元", (18, 21)),
        ("{n}在饿了么点了份{dish}，送到花了{price}块", (11, 20)),
        ("{n}午饭点的{dish}外卖，{price}块钱", (11, 13)),
    ), {"dish": _words("黄焖鸡米饭 麻辣烫 猪脚饭 螺蛳粉 兰州拉面 酸菜鱼饭 煲仔饭 汉堡套餐 "
                       "炸鸡 盖浇饭 轻食沙拉"),
        "price": _prices(16, 58)},
        ("{n}点过几次外卖？", "{n}一共叫了几回外卖？"),
        ("price", "元", ("{n}点外卖一共花了多少钱？",)),
        ("dish", ("{n}外卖都点过些什么？",))),
    Series("groceries", (
        ("{n}去{shop}买菜，花了{price}块", (8, 19)),
        ("{n}在{shop}囤了一周的菜，{price}元", (10, 20)),
        ("{n}下班顺路在{shop}买了点菜，{price}块", (18, 20)),
        ("{n}周末去{shop}采购了一大袋菜和水果，一共{price}", (10, 18)),
    ), {"shop": _words("盒马 永辉超市 菜市场 山姆 沃尔玛 大润发 华润万家"),
        "price": _prices(35, 460)},
        ("{n}买过几次菜？", "{n}一共去买了几回菜？"),
        ("price", "元", ("{n}买菜一共花了多少钱？",)),
        ("shop", ("{n}都在哪些地方买过菜？",))),
    Series("fuel", (
        ("{n}去{station}加了{price}块钱的油", (8, 20)),
        ("{n}的车快没油了，在{station}加满，{price}元", (7, 21)),
        ("{n}在{station}加油花了{price}", (8, 20)),
        ("{n}开车上班前在{station}加了油，{price}块", (7, 9)),
    ), {"station": _words("中石化 中石油 壳牌 中海油"), "price": _prices(180, 460)},
        ("{n}加过几次油？", "{n}这段时间加了几回油？"),
        ("price", "元", ("{n}加油一共花了多少钱？", "{n}的油费加起来多少？"))),
    Series("movie", (
        ("{n}去{cinema}看了部{genre}，票{price}块", (14, 22)),
        ("{n}晚上在{cinema}看了场{genre}，{price}元一张", (19, 22)),
        ("{n}周末看电影去了，{cinema}，一部{genre}，票价{price}", (13, 21)),
        ("{n}一个人在{cinema}看了个{genre}，票{price}块", (14, 22)),
    ), {"cinema": _words("万达影城 CGV影城 横店影城 博纳影城 大地影院"),
        "genre": _words("科幻片 喜剧片 动画片 悬疑片 爱情片 纪录片 动作片"),
        "price": _prices(29, 75)},
        ("{n}看了几场电影？", "{n}一共去电影院看过几次电影？"),
        ("price", "元", ("{n}买电影票一共花了多少钱？",)),
        ("genre", ("{n}都看过哪些类型的电影？",))),
    Series("swim", (
        ("{n}去游泳馆游了{meters}米", (7, 21)),
        ("{n}下班去游泳，游了{meters}米", (18, 21)),
        ("{n}早上游了{meters}米才去上班", (6, 8)),
        ("{n}今天在小区泳池游了{meters}米", (12, 21)),
    ), {"meters": _prices(600, 2000, 100)},
        ("{n}游过几次泳？", "{n}去游了几回泳？"),
        ("meters", "米", ("{n}一共游了多少米？",))),
)

# -- one-off facts -----------------------------------------------------------------------------

ITEMS: dict[str, tuple[str, int, int]] = {  # item -> (measure word, lowest, highest price)
    "空气炸锅": ("台", 199, 599), "电动牙刷": ("支", 99, 399), "扫地机器人": ("台", 1299, 3299),
    "蓝牙耳机": ("副", 129, 1499), "机械键盘": ("把", 199, 899), "显示器": ("台", 799, 2499),
    "跑鞋": ("双", 399, 1099), "羽绒服": ("件", 499, 1899), "电饭煲": ("个", 199, 699),
    "加湿器": ("台", 89, 299), "行李箱": ("个", 299, 899), "智能手表": ("块", 599, 2999),
    "投影仪": ("台", 1999, 4999), "台灯": ("盏", 79, 299), "吸尘器": ("台", 499, 1999),
    "冲锋衣": ("件", 399, 1299),
}
ONLINE = _words("京东 淘宝 拼多多 天猫 得物")
PURCHASE: tuple[Template, ...] = (
    ("{n}在{shop}买了{mw}{item}，{price}块", (10, 22)),
    ("{n}下单了一{mw}{item}，{shop}上{price}元，说是明天到", (12, 23)),
    ("{n}纠结了好久，终于在{shop}把{item}买了，活动价{price}", (19, 23)),
    ("{n}原来的{item}坏了，在{shop}新买了一{mw}，花了{price}", (10, 22)),
    ("{n}趁打折在{shop}入了{mw}{item}，{price}元", (20, 23)),
)
HOTELS = _words("全季酒店 汉庭 亚朵 如家 锦江之星 维也纳酒店 希尔顿欢朋 桔子酒店")
TRIP_PLAN: tuple[Template, ...] = (
    ("{n}{date}要去{city}出差，住{nights}晚", (9, 18)),
    ("{n}过几天去{city}出差，{date}走，待{nights}晚", (10, 21)),
    ("{n}被派去{city}出差，{date}出发，要在那边住{nights}晚", (9, 18)),
    ("公司让{n}{date}去{city}见客户，得住{nights}晚", (9, 18)),
)
TRIP_TICKET: tuple[Template, ...] = (
    ("{n}出差的高铁票订好了，{train}次，{clock}发车，要坐{ride}", (12, 22)),
    ("{n}买好了那趟出差的车票，{clock}的{train}，路上{ride}", (12, 22)),
    ("{n}出差坐{train}，{clock}开，车程{ride}", (12, 22)),
)
TRIP_HOTEL: tuple[Template, ...] = (
    ("{n}出差的酒店订好了，住{hotel}，一晚{price}块", (12, 22)),
    ("{n}把出差住的酒店搞定了，{hotel}，{price}一晚", (12, 22)),
    ("{n}这次出差住{hotel}，在报销标准内，一晚{price}元", (12, 22)),
)
HOLIDAYS = (("清明", datetime(2024, 4, 6)), ("五一", datetime(2024, 5, 5)),
            ("端午", datetime(2024, 6, 10)))
HOLIDAY: tuple[Template, ...] = (
    ("{n}{holiday}跟家里人去{city}玩了{days}天，{what}", (18, 22)),
    ("{n}{holiday}假期去了趟{city}，{what}，待了{days}天", (18, 22)),
    ("{n}{holiday}陪爸妈去{city}转了{days}天，{what}", (18, 22)),
)
HOLIDAY_WHAT = ("吃了好多小吃", "人多得不行", "爬了山", "逛了古镇", "天天下雨", "拍了不少照片")
# symptom -> (department, medicine)
AILMENTS = {
    "腰疼": ("骨科", "膏药和布洛芬"), "嗓子疼": ("耳鼻喉科", "含片和消炎药"),
    "牙疼": ("口腔科", "甲硝唑"), "胃不舒服": ("消化内科", "奥美拉唑"),
    "膝盖疼": ("骨科", "氨糖和止痛药"), "身上起疹子": ("皮肤科", "氯雷他定和药膏"),
    "老是头晕": ("神经内科", "倍他司汀"),
}
HOSPITALS = _words("市一院 人民医院 中医院 社区医院 附属医院 妇幼保健院")
DOCTOR: tuple[Template, ...] = (
    ("{n}{symptom}好几天了，约了{hospital}的{dept}，{date}{part}去看", (8, 22)),
    ("{n}{symptom}，挂了{hospital}{dept}的号，{date}{part}", (8, 22)),
    ("{n}这两天{symptom}，预约了{date}{part}去{hospital}看{dept}", (8, 22)),
)
DOCTOR_AFTER: tuple[Template, ...] = (
    ("{n}看完医生回来了，开了{medicine}，让{days}天后复查", (12, 19)),
    ("{n}去医院看过了，医生说问题不大，开了点{medicine}，{days}天后再去复查", (12, 19)),
    ("{n}从医院回来，拿了{medicine}，医生交代{days}天后回去复查", (12, 19)),
)
CHECKUP: tuple[Template, ...] = (
    ("{n}体检报告出来了，血压{bp}，{finding}", (10, 20)),
    ("{n}拿到了体检报告，{finding}，血压是{bp}", (10, 20)),
)
FINDINGS = ("血脂有点高", "尿酸偏高", "有轻度脂肪肝", "甲状腺有个小结节", "有点贫血", "维生素D不足")
WEIGHT_FIRST: tuple[Template, ...] = (
    ("{n}今天称了一下体重，{kg}公斤，决定开始减肥", (7, 22)),
    ("{n}上秤一看{kg}公斤，说这次一定要瘦下来", (7, 22)),
)
WEIGHT_LATER: tuple[Template, ...] = (
    ("{n}减肥有效果了，今天称是{kg}公斤", (7, 22)),
    ("{n}坚持了两个多月，体重降到{kg}公斤了", (7, 22)),
)
CHILD_INTRO: tuple[Template, ...] = (
    ("{n}的{rel}叫{child}，今年{age}岁", (8, 22)),
    ("{n}家{rel}{child}今年{age}岁了", (8, 22)),
    ("{n}说{rel}{child}已经{age}岁了，越来越不好管", (8, 22)),
)
CHILD_CLASS: tuple[Template, ...] = (
    ("{child}报了{course}，每周{weekday}上课", (9, 21)),
    ("{child}开始上{course}了，一节课两百块", (9, 21)),
    ("给{child}报的{course}今天第一次上课", (9, 21)),
)
COURSES = _words("游泳班 钢琴课 编程课 篮球班 美术班 英语班 围棋班 舞蹈班 书法班")
APPOINTMENT: tuple[Template, ...] = (
    ("{n}约了{date}{clock}{act}", (8, 22)),
    ("{n}{date}{clock}要{act}，别忘了", (8, 22)),
    ("提醒一下，{n}{date}{act}，{clock}", (8, 22)),
)
ACTS = ("去4S店保养车", "跟客户开会", "去面试", "去银行办业务", "跟房东交接钥匙", "去考科目二",
        "参加朋友的婚礼", "去看演唱会", "去办护照", "去搬家公司签合同")
MEALS = {"火锅": ("海底捞", "小龙坎"), "烤肉": ("汉拿山", "九田家"),
         "日料": ("樱花日料", "一番居酒屋"), "粤菜": ("点都德", "陶陶居"),
         "烤鱼": ("探鱼", "江边城外"), "湘菜": ("费大厨", "炊烟"), "西餐": ("王品牛排", "萨莉亚")}
MEAL: tuple[Template, ...] = (
    ("{n}周末跟朋友去{place}吃了{food}，人均{price}", (19, 23)),
    ("{n}和同事在{place}聚餐，吃{food}，人均{price}块", (19, 23)),
    ("{n}带爸妈去{place}吃了顿{food}，人均{price}元", (18, 22)),
)
# hobby -> (places, phrasing, question about the place)
HOBBIES = {
    "钓鱼": (_words("城郊水库 河边钓场 青龙湖"), "{n}周末去{place}钓鱼，钓了{k}条鲫鱼",
             "{n}周末去哪钓的鱼？"),
    "爬山": (_words("凤凰山 南山 白云山 紫金山"), "{n}周末去爬了{place}，爬了{k}个小时",
             "{n}周末爬的哪座山？"),
    "羽毛球": (_words("体育中心 小区球馆 公司附近的球馆"), "{n}周末在{place}打了{k}个小时羽毛球",
               "{n}周末在哪打的羽毛球？"),
    "骑行": (_words("滨江绿道 环湖路 城市绿道"), "{n}周末沿着{place}骑了{k}个小时的车",
             "{n}周末在哪骑的车？"),
}
COMPANIES = _words("星辰科技 华远集团 蓝海物流 启明教育 青禾医疗 云帆网络 鼎盛地产 万象传媒")
JOBS = _words("产品经理 程序员 会计 销售经理 设计师 人事专员 数据分析师 运营")
WORK: tuple[Template, ...] = (
    ("{n}在{company}当{job}，干了{years}年了", (9, 21)),
    ("{n}现在是{company}的{job}", (9, 21)),
    ("{n}跳槽去了{company}，做{job}", (9, 21)),
)
NAMED_CHATTER = ("{n}今天心情不错", "{n}说这周好累，想早点睡", "{n}换了个新发型",
                 "{n}说最近睡得不太好", "{n}今天在家歇了一天", "{n}说明天要降温了")
CHATTER = ("今天好热啊", "地铁上挤死了", "下雨了，出门忘带伞", "楼下新开了家面包店",
           "快递又被放错柜子了", "今天路上堵了一个小时", "这周事情好多", "最近在追一部古装剧",
           "家里的绿萝好像要死了", "明天要早起，先睡了")
NOISE_BEFORE = ("哎今天累死了，对了问你个事，", "刚开完会，脑子有点乱。", "emmm我想想啊，",
                "我手机快没电了，快帮我查下：", "话说回来，", "不好意思又来问了，",
                "等下还要去接孩子，先问一句：", "外面下大雨，我在等车，顺便问下，")
NOISE_AFTER = ("我记不太清了", "你帮我翻翻记录", "好像之前说过的", "谢啦", "急用，谢谢！",
               "好像是前阵子说的")
TYPOS = (("什么", "神马"), ("哪", "那"), ("钱", "前"), ("几点", "几典"), ("多少", "多小"))
PLACES = _words("家里 公司 地铁上 路上 商场 小区")

# -- people, messages, questions -------------------------------------------------------------


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
        message = Message(text.format(n=self.name, **values), when,
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


def _person(rng: random.Random, names: Names, number: int) -> Person:
    # a few surnames carry most people, as in China (王, 李, 张 ...)
    surname = rng.choices(SURNAMES, weights=[1 / (i + 3) for i in range(len(SURNAMES))])[0]
    start = FIRST_DAY + timedelta(days=rng.randint(0, 45))
    p = Person(f"p{number:03d}", names.new(surname, GIVEN), rng.choice(CITIES), start,
               rng.randint(100, 140), random.Random(rng.random()))
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


def _noisy(rng: random.Random, text: str) -> str:
    """The question as people type it in passing: chatter around it, often a typo in it."""
    core = text.removesuffix("？")
    typos = [(a, b) for a, b in TYPOS if a in core]
    if typos and rng.random() < 0.7:
        a, b = rng.choice(typos)
        core = core.replace(a, b, 1)
    return rng.choice(NOISE_BEFORE) + core + "？" + rng.choice(NOISE_AFTER)


def _choose(rng: random.Random, people: list[Person]) -> None:
    """100 questions of each kind: the scarcest kinds first, at most three a person, and no
    two questions of one person sharing a gold message."""
    order = sorted(KINDS, key=lambda k: sum(d.kind == k for p in people for d in p.drafts))
    for kind in order:
        # questions that name their person and questions that pick them by a condition, in
        # turn (there are many more of the second)
        named = [(p, d) for p in people for d in p.drafts if d.kind == kind and d.named]
        picked = [(p, d) for p in people for d in p.drafts if d.kind == kind and not d.named]
        rng.shuffle(named)
        rng.shuffle(picked)
        drafts = [pair for pairs in zip_longest(named, picked) for pair in pairs if pair]
        taken = 0
        for p, d in drafts:
            if taken == QUOTA:
                break
            used = {id(m) for q in p.questions for m in q.gold}
            if len(p.questions) >= MAX_QUESTIONS or used & {id(m) for m in d.gold}:
                continue
            p.questions.append(d)
            taken += 1
        assert taken == QUOTA, (kind, taken)


# -- the file -----------------------------------------------------------------------------------


def _stamp(when: datetime) -> str:
    return when.strftime("%Y年%m月%d日 ") + "周" + WEEKDAYS[when.weekday()] \
        + when.strftime(" %H:%M")


def _render(p: Person) -> dict[str, Any]:
    questions = [{"qid": i, "question": q.text, "answer": q.answer,
                  "target_step_id": sorted(m.mid for m in q.gold), "kind": q.kind,
                  "time": _stamp(p.asked)}
                 for i, q in enumerate(sorted(p.questions, key=lambda q: KINDS.index(q.kind)))]
    return {"tid": p.tid, "user": p.name,
            "message_list": [{"mid": m.mid, "message": m.text, "time": _stamp(m.when),
                              "place": f"{p.city}·{p.rng.choice(PLACES)}"}
                             for m in p.messages],
            "question_list": questions}


def build() -> list[dict[str, Any]]:
    """The pool: a JSON list of 250 trajectories (one pool for ``remem eval memdaily``)."""
    rng = random.Random(SEED)
    names = Names(rng)
    people = [_person(rng, names, i) for i in range(1, PEOPLE + 1)]
    _picked_by_condition(people)
    for p in people:
        for d in [d for d in p.drafts if d.kind in ("simple", "conditional")]:
            p.drafts.append(Draft("noisy", _noisy(p.rng, d.text), d.answer, d.gold, d.named,
                                  d.key))
    _choose(rng, people)
    _check(people)
    return [_render(p) for p in people]


def _picked_by_condition(people: list[Person]) -> None:
    """Conditional questions that pick their person by something only they did (在云帆网络当
    数据分析师的那位, 5月3号去面试的那位), asking another fact: the condition's messages
    and the fact's are the gold."""
    fits = Counter(s.key for p in people for s in p.subjects)
    for p in people:
        for subject in p.subjects:
            if fits[subject.key] != 1:
                continue
            for target in p.targets:
                if set(map(id, target.gold)) & set(map(id, subject.said)):
                    continue  # the condition itself: 在星辰科技当设计师的那位是做什么的
                text = p.rng.choice(target.options).replace(
                    "{n}", p.rng.choice(subject.phrases))
                p.drafts.append(Draft("conditional", text, target.answer,
                                      [*subject.said, *target.gold], False, subject.key))


def _check(people: list[Person]) -> None:
    """Gold holds the facts; names are never said outside their own trajectory; a condition
    that picks a person fits no one else."""
    texts = [q.text for p in people for q in p.questions]
    assert len(set(texts)) == len(texts), "a question text repeats: it would be ambiguous"
    fits = Counter(s.key for p in people for s in p.subjects)
    for p in people:
        for q in p.questions:
            assert q.gold and len({id(m) for m in q.gold}) == len(q.gold), q
            assert p.name in q.text if q.named else fits[q.key] == 1, q.text
            assert "{" not in q.text, q.text
            for m in q.gold:
                assert all(c in m.text for c in m.checks), (m.text, m.checks)
                assert p.name in m.text or any(c in m.text for c in p.children), m.text
            if q.kind == "aggregative":
                assert 4 <= len(q.gold) <= 8, q
        times = [m.when for m in p.messages]
        assert times == sorted(times)
    owner = {n: p for p in people for n in (p.name, *p.children)}
    for p in people:
        for text in [m.text for m in p.messages] + [q.text for q in p.questions]:
            for name, other in owner.items():
                assert other is p or name not in text, (name, text)


def encode(data: list[dict[str, Any]]) -> bytes:
    return (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tests/data/make_zh_pool.py OUT.json", file=sys.stderr)
        return 2
    data = build()
    raw = encode(data)
    Path(argv[0]).write_bytes(raw)
    questions = [q for t in data for q in t["question_list"]]
    kinds = Counter(q["kind"] for q in questions)
    print(f"{argv[0]}: {len(data)} trajectories, "
          f"{sum(len(t['message_list']) for t in data)} messages, {len(questions)} questions "
          f"({', '.join(f'{k} {kinds[k]}' for k in KINDS)}), sha256 "
          f"{hashlib.sha256(raw).hexdigest()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
