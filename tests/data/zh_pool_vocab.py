"""The vocabulary of ``zh_pool`` (``make_zh_pool.py``): names, repeated events, one-off facts.

Data only: the shared phrasings (``{n}`` is where the person goes), and the shops, dishes,
cities and price ranges everyone draws from (which is what makes the pool's messages
near-alike), and the chatter and typos of the noisy questions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

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
# the first-person voice: the one message where a person says who they are
INTRODUCTION: tuple[Template, ...] = (
    ("你好，我叫{name}，在{city}生活", (8, 10)),
    ("先自我介绍一下，我是{name}，住在{city}", (8, 10)),
    ("我是{name}，以后日常的事都跟你说，帮我记着", (8, 10)),
    ("认识一下，我叫{name}，{city}人", (8, 10)),
)
